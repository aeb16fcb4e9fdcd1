/**
 * The request fields of the OpenAI chat completions wire format that reach a provider (issue 14):
 * only documented fields are forwarded, so a caller cannot make a provider bill differently from the
 * catalog price (`service_tier`), store data on the gateway's account (`store`, `metadata`), or use
 * any other provider-side feature the gateway does not meter. Everything else in the body is
 * dropped silently (OpenAI-compatible SDKs add fields of their own). The simulator's `sim` object is
 * forwarded only to providers the catalog marks `simulator: true` (dev/test catalogs).
 *
 * One module per wire format: this is the OpenAI format's list (docs/api.md lists it too).
 */
export const OPENAI_CHAT_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'messages',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'n',
  'stop',
  'presence_penalty',
  'frequency_penalty',
  'logit_bias',
  'logprobs',
  'top_logprobs',
  'seed',
  'user',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'functions',
  'function_call',
  'response_format',
  'reasoning_effort',
  'modalities',
  'audio',
  'prediction',
  'verbosity',
  'web_search_options',
]);

/** The simulator's request field (fault injection, delays), for `simulator: true` providers only. */
const SIMULATOR_FIELD = 'sim';

/** The allowed fields of `body`, in their order. */
function upstreamFields(
  body: Record<string, unknown>,
  provider: { simulator?: boolean },
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(body)) {
    if (OPENAI_CHAT_FIELDS.has(key) || (key === SIMULATOR_FIELD && provider.simulator === true)) {
      out[key] = body[key];
    }
  }
  return out;
}

/**
 * The upstream body for one candidate: the allowed fields, the provider's model name, and for a
 * stream `stream_options.include_usage` (the usage chunk the relay bills from).
 */
export function chatCompletionsBody(
  original: Record<string, unknown>,
  provider: { simulator?: boolean },
  upstreamModel: string,
  stream: boolean,
): Record<string, unknown> {
  const body = upstreamFields(original, provider);
  body.model = upstreamModel;
  if (stream) {
    body.stream_options = {
      ...((body.stream_options as object | null | undefined) ?? {}),
      include_usage: true,
    };
  }
  return body;
}

/** `<base path>/chat/completions` (the base URL carries the version path: `https://api.openai.com/v1`). */
export const chatCompletionsPath = (baseUrl: string): string =>
  `${new URL(baseUrl).pathname.replace(/\/+$/, '')}/chat/completions`;

/** Request headers for a provider key (Bearer), built once per key. */
export function chatCompletionsHeaders(apiKey: string | undefined): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  return headers;
}
