import { badRequest } from '@tollgate/errors';
import type { CanonicalMessage, CanonicalRequest } from '../../pipeline/request';

/** Upper bound of `n` (OpenAI's own limit is 128). */
const MAX_N = 128;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Validation of POST /chat/completions: the chat door's parse (its canonical request is the body
 * itself). Only the fields the gateway relies on are checked; of the others, only the wire format's
 * documented fields reach the provider (providers/openai/request.ts).
 * Hand-written rather than zod: it runs on every request and the messages name the field exactly.
 */
export function parseChatRequest(body: unknown): CanonicalRequest {
  if (!isObject(body)) throw badRequest('Request body must be a JSON object');
  const { model, messages, stream } = body;
  if (model === undefined) throw badRequest('model: required');
  if (typeof model !== 'string' || model.length === 0) throw badRequest('model: expected a non-empty string');
  if (messages === undefined) throw badRequest('messages: required');
  if (!Array.isArray(messages)) throw badRequest('messages: expected an array');
  if (messages.length === 0) throw badRequest('messages: must contain at least one message');
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i];
    if (!isObject(m)) throw badRequest(`messages.${i}: expected an object`);
    if (typeof m.role !== 'string' || m.role.length === 0)
      throw badRequest(`messages.${i}.role: expected a string`);
    const c = m.content;
    if (
      !(
        typeof c === 'string' ||
        c === null ||
        Array.isArray(c) ||
        (c === undefined && m.role === 'assistant')
      )
    ) {
      throw badRequest(`messages.${i}.content: expected a string, an array of content parts or null`);
    }
    if (Array.isArray(c)) {
      for (let j = 0; j < c.length; j++) {
        const part: unknown = c[j];
        if (isObject(part) && part.type === 'input_audio') {
          throw badRequest(
            `messages.${i}.content.${j}: audio input is not offered by this gateway (its models are text and image to text; providers bill audio tokens at rates the catalog does not price)`,
            { field: `messages.${i}.content.${j}` },
          );
        }
      }
    }
  }
  unpricedFeatures(body);
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') {
    throw badRequest('stream: expected a boolean');
  }
  if (body.stream_options !== undefined && body.stream_options !== null && !isObject(body.stream_options)) {
    throw badRequest('stream_options: expected an object');
  }
  const a = optionalCount(body, 'max_completion_tokens');
  const b = optionalCount(body, 'max_tokens');
  const maxTokens = a !== null && b !== null ? Math.max(a, b) : (a ?? b);
  const n = optionalCount(body, 'n') ?? 1;
  if (n > MAX_N) throw badRequest(`n: at most ${MAX_N} completions per request`);
  const toolsJson = definitionsJson(body);
  return {
    body,
    model,
    messages: messages as CanonicalMessage[],
    stream: stream === true,
    maxTokens,
    n,
    toolsJson,
  };
}

/**
 * Fields that make a provider bill beyond the text tokens the catalog prices (every model of the
 * catalog is text → text, `GET /models`): audio output (`audio`, `modalities` with "audio") is billed
 * per audio token at audio rates, web search (`web_search_options`) per call. Forwarded, they would be
 * paid by the gateway's provider account and billed to the key at text prices, so they are refused.
 * `modalities: ["text"]`, which some clients send, is the default and passes.
 */
function unpricedFeatures(body: Record<string, unknown>): void {
  if (body.audio !== undefined && body.audio !== null) {
    throw badRequest('audio: audio output is not offered by this gateway (its models are text → text)', {
      field: 'audio',
    });
  }
  const modalities = body.modalities;
  if (
    modalities !== undefined &&
    modalities !== null &&
    !(Array.isArray(modalities) && modalities.every((m) => m === 'text'))
  ) {
    throw badRequest('modalities: only ["text"] is offered by this gateway (its models are text → text)', {
      field: 'modalities',
    });
  }
  if (body.web_search_options !== undefined && body.web_search_options !== null) {
    throw badRequest(
      'web_search_options: web search is not offered by this gateway (providers bill it per call, which the catalog does not price)',
      { field: 'web_search_options' },
    );
  }
}

/**
 * What the provider puts in the prompt besides the messages, as one JSON text (null when nothing):
 * `tools` and `functions` (each an array when given), and — issue 22 — a `response_format` (its JSON
 * schema is given to the model) and a `prediction` (its content is read as input). Providers bill all
 * of it as prompt tokens, so the admission and the estimate count it.
 */
function definitionsJson(body: Record<string, unknown>): string | null {
  const defs: unknown[] = [];
  for (const field of ['tools', 'functions'] as const) {
    const v = body[field];
    if (v === undefined || v === null) continue;
    if (!Array.isArray(v)) throw badRequest(`${field}: expected an array`);
    if (v.length > 0) defs.push(v);
  }
  for (const field of ['response_format', 'prediction'] as const) {
    const v = body[field];
    if (v === undefined || v === null) continue;
    if (!isObject(v)) throw badRequest(`${field}: expected an object`);
    // A plain {type: "text"} / {type: "json_object"} adds a few tokens at most; anything else counts whole.
    if (Object.keys(v).length > 1 || field === 'prediction') defs.push(v);
  }
  return defs.length === 0 ? null : JSON.stringify(defs.length === 1 ? defs[0] : defs);
}

function optionalCount(body: Record<string, unknown>, field: string): number | null {
  const v = body[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
    throw badRequest(`${field}: expected a positive integer`);
  return v;
}
