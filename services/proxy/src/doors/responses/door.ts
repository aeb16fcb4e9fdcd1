import type { Completion } from '../../pipeline/completion';
import { finishReasonOf } from '../../pipeline/errors';
import type { Outcome } from '../../pipeline/outcome';
import { isProviderUsage, tokensFromUsage } from '../../providers/openai/usage';
import { messageText } from '../chat/usage';
import type { FrontDoor } from '../door';
import { ResponsesStream } from './answer-stream';
import { openAIErrorEvent, responsesErrorBody } from './errors';
import {
  isResponsesUsage,
  nativeResponsesBody,
  outputTextOf,
  tokensFromResponsesUsage,
  withEcho,
} from './native';
import { contextOf, parseResponses, type ResponsesCanonical } from './request-of';
import { responseOfCompletion, responsesUsage } from './response';

type Json = Record<string, unknown>;

/** A native provider's Response: priced from its usage (else the estimate of its output), ids rewritten. */
function readNative(c: Completion, json: Json): Outcome | null {
  if (json.object !== 'response' || !Array.isArray(json.output)) return null;
  const fromProvider = isResponsesUsage(json.usage);
  const tokens = fromProvider ? tokensFromResponsesUsage(json.usage) : c.estimate(outputTextOf(json));
  const cost = c.cost(tokens);
  const upstreamId = typeof json.id === 'string' ? json.id : null;
  const priced = responsesUsage(tokens, cost);
  withEcho(json, (c.request as ResponsesCanonical).responses.echo);
  json.id = c.requestId;
  json.model = c.model.id;
  json.provider = c.provider.name;
  json.usage = fromProvider ? { ...(json.usage as Json), cost: priced.cost, is_byok: false } : priced;
  return {
    kind: 'served',
    tokens,
    source: fromProvider ? 'provider' : 'estimated',
    costUnits: cost,
    finishReason: json.status === 'incomplete' ? 'length' : json.status === 'completed' ? 'stop' : null,
    upstreamId,
    lastBytes: c.cancelled ? null : JSON.stringify(json),
  };
}

/**
 * The OpenAI Responses door (`POST /responses`): what Codex, the OpenAI Agents SDK and the AI SDK's
 * OpenAI provider speak. Stateless. To an OpenAI-format provider the catalog marks `responses: true`
 * the caller's body passes through natively (native.ts: reasoning items round-trip); for every other
 * provider the request is translated into the canonical chat request
 * (request.ts, input.ts, tools.ts), so every provider format serves it (OpenAI chat completions,
 * Anthropic Messages, …) through the one pipeline; the answer (a `chat.completion` or OpenAI chunks,
 * bridged by the provider's wire format) is rendered as a Response object (response.ts) or the
 * Responses stream events (stream.ts, answer-stream.ts), errors in OpenAI's shape (errors.ts).
 */
export const responsesDoor: FrontDoor = {
  api: 'responses',
  path: '/responses',
  native: null,
  // OpenAI-format providers the catalog marks as serving the Responses API get the caller's body (native.ts).
  nativeFor: (provider) => provider.format === 'openai' && provider.responses === true,
  nativePath: (baseUrl) => `${new URL(baseUrl).pathname.replace(/\/+$/, '')}/responses`,
  parse: parseResponses,

  /**
   * Native (a provider serving the Responses API): its Response, the id, model and priced usage
   * rewritten. Translated: a chat.completion → the Response, priced from the provider's usage (else
   * the estimate of its text).
   */
  readJson(c, json, native) {
    if (native) return readNative(c, json);
    const providerUsage = json.usage;
    const fromProvider = isProviderUsage(providerUsage);
    const tokens = fromProvider ? tokensFromUsage(providerUsage) : c.estimate(messageText(json));
    const cost = c.cost(tokens);
    const response = responseOfCompletion(contextOf(c), json, tokens, cost, c.provider.name);
    return {
      kind: 'served',
      tokens,
      source: fromProvider ? 'provider' : 'estimated',
      costUnits: cost,
      finishReason: finishReasonOf(json.choices),
      upstreamId: typeof json.id === 'string' ? json.id : null,
      lastBytes: c.cancelled ? null : JSON.stringify(response),
    };
  },

  stream: (c, res, writeTimeoutMs) => new ResponsesStream(c, res, writeTimeoutMs),

  nativeBody: (request, target) => nativeResponsesBody((request as ResponsesCanonical).native ?? {}, target),

  errorBody: responsesErrorBody,

  // After the 200 with nothing but keep-alive comments written: OpenAI's `error` stream event.
  streamError: (err) => openAIErrorEvent(err),
};
