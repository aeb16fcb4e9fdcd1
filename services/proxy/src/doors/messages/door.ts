import type { IncomingHttpHeaders } from 'node:http';
import type { Catalog, CatalogModel } from '@tollgate/catalog';
import { badRequest, safeText } from '@tollgate/errors';
import type { Handler } from '../../http/types';
import { finishReasonOf } from '../../pipeline/errors';
import type { CanonicalRequest } from '../../pipeline/request';
import { finishReason } from '../../providers/anthropic/response';
import { isProviderUsage, tokensFromUsage } from '../../providers/openai/usage';
import { messageText } from '../chat/usage';
import { parseChatRequest } from '../chat/validation';
import type { FrontDoor } from '../door';
import { MessagesStream } from './answer-stream';
import { anthropicError, errorBody, errorEventOf } from './errors';
import { nativeMessageText, nativeMessageTokens } from './native';
import { type MessagesRequest, nativeBody, parseMessagesRequest } from './request';
import { toAnthropicMessage } from './response';
import { apiKeyHeader } from './routes';

type Json = Record<string, unknown>;

/** Longest session id recorded (Claude Code's is a 36-character uuid). */
const SESSION_ID_MAX = 128;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The catalog model the body names, if any (parse's own check refuses unknown ones). */
function modelOf(catalog: Catalog, body: unknown): CatalogModel | undefined {
  return isObj(body) && typeof body.model === 'string' ? catalog.model(body.model) : undefined;
}

/** The catalog says the model reasons (OpenRouter's `reasoning`, or `reasoning_effort`). */
function reasons(model: CatalogModel | undefined): boolean {
  const params = model?.supportedParameters;
  return params !== undefined && (params.includes('reasoning') || params.includes('reasoning_effort'));
}

/** The first untranslatable field as the 400 an OpenAI-format candidate answers (null: none). */
function untranslatableError(m: MessagesRequest) {
  const first = m.untranslatable[0];
  if (!first) return undefined;
  return badRequest(
    `${first.field}: ${first.reason}; model '${m.model}' has no Anthropic-format provider that could take it as sent`,
    { field: first.field },
  );
}

/** `anthropic-beta` goes on to Anthropic-format providers (the features it turns on are theirs). */
function nativeHeaders(headers: IncomingHttpHeaders | undefined): Record<string, string> | undefined {
  const beta = headers?.['anthropic-beta'];
  if (beta === undefined) return undefined;
  return { 'anthropic-beta': Array.isArray(beta) ? beta.join(',') : beta };
}

/**
 * The longest cache write the body asks for: any `cache_control` in system blocks, content blocks
 * (tool results and their content included) or tools; `ttl: "1h"` anywhere makes it `1h`.
 */
export function cacheWriteOf(body: Json): '5m' | '1h' | undefined {
  let found: '5m' | '1h' | undefined;
  const visit = (v: unknown, depth: number): void => {
    if (found === '1h' || depth > 4 || typeof v !== 'object' || v === null) return;
    if (Array.isArray(v)) {
      for (const x of v) visit(x, depth + 1);
      return;
    }
    const o = v as Json;
    if (isObj(o.cache_control)) found = o.cache_control.ttl === '1h' ? '1h' : (found ?? '5m');
    if (Array.isArray(o.content)) visit(o.content, depth + 1);
  };
  visit(body.system, 0);
  visit(body.tools, 0);
  if (Array.isArray(body.messages)) for (const m of body.messages) visit(m, 0);
  return found;
}

/** The Messages request as the canonical request, with what the pipeline needs for the native path. */
export function parseForDoor(
  catalog: Catalog,
  body: unknown,
  headers?: IncomingHttpHeaders,
): CanonicalRequest {
  const model = modelOf(catalog, body);
  const m = parseMessagesRequest(body, { reasoning: reasons(model) });
  // Claude Code asks for as many tokens as a Claude model gives (32000, 64000): another provider
  // gets at most its model's output cap (catalog), which the admission assumed anyway (worstCaseCost).
  const cap = model?.maxOutputTokens;
  const field = m.chat.max_completion_tokens === undefined ? 'max_tokens' : 'max_completion_tokens';
  if (cap !== undefined && m.maxTokens > cap) m.chat[field] = cap;
  const canonical: CanonicalRequest = parseChatRequest(m.chat);
  canonical.native = m.body;
  canonical.untranslatable = untranslatableError(m);
  canonical.nativeHeaders = nativeHeaders(headers);
  const session = headers?.['x-claude-code-session-id'];
  canonical.sessionId =
    typeof session === 'string' && session.length > 0 ? safeText(session, SESSION_ID_MAX) : null;
  canonical.endUser = m.userId;
  // Images and documents only the native body carries (file or URL sources): reserved for all the same.
  const images = m.untranslatable.filter((u) => u.media === 'image').length;
  const documents = m.untranslatable.filter((u) => u.media === 'document').length;
  if (images + documents > 0) canonical.nativeMedia = { images, documents };
  const cache = cacheWriteOf(m.body);
  if (cache) canonical.cacheWrite = cache;
  return canonical;
}

/**
 * The Anthropic Messages door (`POST /messages`, Anthropic's API, for Claude Code and the Anthropic
 * SDKs). Its native format is Anthropic's: an Anthropic-format provider gets the caller's body with
 * only the model replaced (and `anthropic-beta`), and its answer and events pass through as they came,
 * the usage read on the way (native.ts). Any other provider gets the canonical (OpenAI chat)
 * translation (request.ts, content.ts) and its answer is rendered as a Message (response.ts) or as
 * Anthropic's stream events (stream.ts). Errors are Anthropic's (errors.ts).
 */
export function messagesDoor(catalog: Catalog): FrontDoor {
  return {
    api: 'messages',
    path: '/messages',
    native: 'anthropic',
    before: [apiKeyHeader as Handler],
    parse: (body, headers) => parseForDoor(catalog, body, headers),

    nativeBody: (request, target) => nativeBody(request.native ?? {}, target.upstreamModel, target.simulator),

    readJson(c, json, native) {
      if (native) {
        if (json.type !== 'message') return null;
        const reported = nativeMessageTokens(json);
        const tokens = reported ?? c.estimate(nativeMessageText(json));
        return {
          kind: 'served',
          tokens,
          source: reported ? 'provider' : 'estimated',
          costUnits: c.cost(tokens),
          finishReason: typeof json.stop_reason === 'string' ? finishReason(json.stop_reason) : null,
          upstreamId: typeof json.id === 'string' ? json.id : null,
          lastBytes: c.cancelled ? null : JSON.stringify(json),
        };
      }
      const fromProvider = isProviderUsage(json.usage);
      const tokens = fromProvider ? tokensFromUsage(json.usage) : c.estimate(messageText(json));
      const message = toAnthropicMessage(json, { id: c.requestId, model: c.model.id, tokens });
      return {
        kind: 'served',
        tokens,
        source: fromProvider ? 'provider' : 'estimated',
        costUnits: c.cost(tokens),
        finishReason: finishReasonOf(json.choices),
        upstreamId: typeof json.id === 'string' ? json.id : null,
        lastBytes: c.cancelled ? null : JSON.stringify(message),
      };
    },

    stream: (c, res, writeTimeoutMs) => new MessagesStream(c, res, writeTimeoutMs),

    errorBody(err) {
      const e = anthropicError(err);
      return { status: e.status, body: errorBody(e, null) };
    },

    streamError: (err) => errorEventOf(anthropicError(err)),
  };
}
