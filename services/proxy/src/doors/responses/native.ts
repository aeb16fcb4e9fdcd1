import type { TokenCounts } from '../../providers/wire-format';
import type { ResponseEcho } from './request';

/**
 * The native path of the Responses door: an OpenAI-format provider the catalog marks `responses: true`
 * gets the caller's Responses body itself (only the fields below, the model replaced), so what the
 * chat translation cannot carry — reasoning items with their encrypted content, namespaced tools,
 * `include` — round-trips; its answer and events come back as they were, with the id, the model and
 * the priced usage rewritten (answer-stream.ts, door.ts).
 *
 * Fields sent: the Responses API's documented request fields the gateway meters (issue 14's rule, as
 * providers/openai/request.ts for chat): `store` is always false (nothing kept on the gateway's
 * provider account), hosted and custom tools are withheld as on the translated path (the gateway does
 * not price their calls: the `X-Tollgate-Withheld-Tools` header names them), `metadata`,
 * `service_tier`, `background`, `client_metadata`, `prompt_cache_retention` and unknown fields are
 * dropped, and the simulator's `sim` goes only to `simulator: true` providers.
 */

type Json = Record<string, unknown>;

const NATIVE_FIELDS: ReadonlySet<string> = new Set([
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'max_output_tokens',
  'temperature',
  'top_p',
  'text',
  'reasoning',
  'include',
  'stream',
  'user',
  'safety_identifier',
  'prompt_cache_key',
  'truncation',
]);

const SERVED_TOOLS = new Set(['function', 'namespace']);

/** The upstream body of a native candidate. */
export function nativeResponsesBody(
  native: Json,
  target: { upstreamModel: string; simulator: boolean },
): Json {
  const body: Json = { model: target.upstreamModel };
  for (const key of Object.keys(native)) if (NATIVE_FIELDS.has(key)) body[key] = native[key];
  if (Array.isArray(native.tools)) {
    body.tools = native.tools.filter(
      (t) => typeof t === 'object' && t !== null && SERVED_TOOLS.has((t as Json).type as string),
    );
    if ((body.tools as unknown[]).length === 0) {
      delete body.tools;
      delete body.tool_choice;
    }
  }
  body.store = false;
  if (target.simulator && native.sim !== undefined) body.sim = native.sim;
  return body;
}

const count = (v: unknown): number =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
const obj = (v: unknown): Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {};

/** A Responses usage object with real counts (else the answer is estimated). */
export const isResponsesUsage = (u: unknown): boolean =>
  typeof obj(u).input_tokens === 'number' && typeof obj(u).output_tokens === 'number';

/** Responses usage → the gateway's counts (input includes cached, output includes reasoning). */
export function tokensFromResponsesUsage(u: unknown): TokenCounts {
  const usage = obj(u);
  return {
    prompt: count(usage.input_tokens),
    completion: count(usage.output_tokens),
    cached: count(obj(usage.input_tokens_details).cached_tokens),
    cacheWrite: 0,
    reasoning: count(obj(usage.output_tokens_details).reasoning_tokens),
  };
}

/** The text of a Response's output items (the estimate when the provider reported no usage). */
export function outputTextOf(response: Json): string {
  let text = '';
  const output = Array.isArray(response.output) ? response.output : [];
  for (const raw of output) {
    const item = obj(raw);
    if (typeof item.arguments === 'string') text += `${String(item.name ?? '')}${item.arguments}`;
    for (const part of [
      ...(Array.isArray(item.content) ? item.content : []),
      ...(Array.isArray(item.summary) ? item.summary : []),
    ]) {
      const p = obj(part);
      if (typeof p.text === 'string') text += p.text;
    }
  }
  return text;
}

/**
 * A native provider's Response with what the gateway kept from it filled in from the request (the
 * fields OpenAI's Response repeats): `metadata` is never sent to the provider, so the request's is
 * shown; the others only where the provider left them out.
 */
export function withEcho(response: Json, echo: ResponseEcho): Json {
  for (const [key, value] of Object.entries(echo)) {
    if (key === 'metadata' || response[key] === undefined) response[key] = value;
  }
  response.store = false;
  return response;
}
