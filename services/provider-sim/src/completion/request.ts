import { OpenAIError } from '../http/openai-error';
import type { SimMessage } from './prompt-tokens';
import { openAiToolCall, type SimToolCall } from './tool-call';

/** Per-request behaviour, from the optional `sim` object of the body (see README). */
export interface SimOptions {
  completionTokens?: number;
  errorStatus?: number;
  errorMessage?: string;
  errorAfterChunks?: number;
  cutAfterChunks?: number;
  omitUsage: boolean;
  cachedTokens: number;
  cacheWriteTokens?: number;
  reasoningTokens: number;
  ttftMs?: number;
  interTokenMs?: number;
  /** Text of every content chunk instead of the generated pieces (adversarial outputs in tests). */
  piece?: string;
  /** `Retry-After` header (seconds) sent with an `error_status` answer. */
  retryAfter?: number;
  /** Delay before the end of the answer that carries the usage (stream: the finish and usage chunks). */
  usageDelayMs?: number;
  /** The `usage.prompt_tokens` an embeddings answer reports instead of its own count (a provider that under-reports). */
  promptTokens?: number;
  /** Prompt tokens of every image part (instead of 85). */
  imageTokens?: number;
  /** Cache-write tokens written for one hour (Anthropic `ttl: "1h"`), on top of `cacheWriteTokens`. */
  cacheWrite1hTokens?: number;
  /** A label the charge ledger (GET /sim/ledger) records the request under. */
  tag?: string;
}

export interface CompletionRequest {
  model: string;
  messages: SimMessage[];
  stream: boolean;
  includeUsage: boolean;
  /** The lower of max_tokens and max_completion_tokens, when given. */
  maxTokens?: number;
  sim: SimOptions;
  /** The function the answer calls (tool-call.ts), if any. */
  tool?: SimToolCall;
  /** Names of the function tools offered (none when `tool_choice` is `none`): scripted calls (script/). */
  tools: string[];
  /** The JSON schema of `response_format: {type: "json_schema"}`: the answer is a JSON value of it (script/). */
  responseSchema?: unknown;
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);
const ROLE_LIST = "'system', 'assistant', 'user', 'function', 'tool', and 'developer'";

const typeName = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : `a ${typeof v}`);

const invalidType = (param: string, expected: string, v: unknown) =>
  new OpenAIError(
    400,
    `Invalid type for '${param}': expected ${expected}, but got ${typeName(v)} instead.`,
    'invalid_request_error',
    param,
    'invalid_type',
  );

function intParam(
  obj: Record<string, unknown>,
  key: string,
  param: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw invalidType(param, 'an integer', v);
  if (v < min) {
    throw new OpenAIError(
      400,
      `Invalid '${param}': integer below minimum value. Expected a value >= ${min}, but got ${v} instead.`,
      'invalid_request_error',
      param,
      'integer_below_min_value',
    );
  }
  if (v > max) {
    throw new OpenAIError(
      400,
      `Invalid '${param}': integer above maximum value. Expected a value <= ${max}, but got ${v} instead.`,
      'invalid_request_error',
      param,
      'integer_above_max_value',
    );
  }
  return v;
}

function boolParam(obj: Record<string, unknown>, key: string, param: string): boolean | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw invalidType(param, 'a boolean', v);
  return v;
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The names of chat function tools (`tools[].function.name`). */
function chatToolNames(raw: unknown): string[] {
  if (!Array.isArray(raw)) return [];
  const names: string[] = [];
  for (const t of raw) {
    const name = isObject(t) && isObject(t.function) ? t.function.name : undefined;
    if (typeof name === 'string') names.push(name);
  }
  return names;
}

function parseMessages(raw: unknown): SimMessage[] {
  if (raw === undefined) {
    throw new OpenAIError(
      400,
      "Missing required parameter: 'messages'.",
      'invalid_request_error',
      'messages',
      'missing_required_parameter',
    );
  }
  if (!Array.isArray(raw)) throw invalidType('messages', 'an array', raw);
  if (raw.length === 0) {
    throw new OpenAIError(
      400,
      "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      'invalid_request_error',
      'messages',
      'empty_array',
    );
  }
  for (let i = 0; i < raw.length; i++) {
    const m: unknown = raw[i];
    const at = `messages[${i}]`;
    if (!isObject(m)) throw invalidType(at, 'an object', m);
    if (m.role === undefined) {
      throw new OpenAIError(
        400,
        `Missing required parameter: '${at}.role'.`,
        'invalid_request_error',
        `${at}.role`,
        'missing_required_parameter',
      );
    }
    if (typeof m.role !== 'string' || !ROLES.has(m.role)) {
      throw new OpenAIError(
        400,
        `Invalid value: '${String(m.role)}'. Supported values are: ${ROLE_LIST}.`,
        'invalid_request_error',
        `${at}.role`,
        'invalid_value',
      );
    }
    const c = m.content;
    const nullable = m.role === 'assistant';
    if (c === undefined && !nullable) {
      throw new OpenAIError(
        400,
        `Missing required parameter: '${at}.content'.`,
        'invalid_request_error',
        `${at}.content`,
        'missing_required_parameter',
      );
    }
    if (c !== undefined && typeof c !== 'string' && !Array.isArray(c) && !(c === null && nullable)) {
      throw invalidType(`${at}.content`, 'one of a string or array of objects', c);
    }
  }
  return raw as SimMessage[];
}

function tagParam(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length === 0 || v.length > 200)
    throw invalidType('sim.tag', 'a string of 1 to 200 characters', v);
  return v;
}

/** The `sim` object of a request body (both wire formats); throws OpenAIError (400) naming the field. */
export function parseSim(raw: unknown): SimOptions {
  if (raw === undefined || raw === null) return { omitUsage: false, cachedTokens: 0, reasoningTokens: 0 };
  if (!isObject(raw)) throw invalidType('sim', 'an object', raw);
  const errorMessage = raw.error_message;
  if (errorMessage !== undefined && typeof errorMessage !== 'string')
    throw invalidType('sim.error_message', 'a string', errorMessage);
  const piece = raw.piece;
  if (piece !== undefined && (typeof piece !== 'string' || piece.length === 0))
    throw invalidType('sim.piece', 'a non-empty string', piece);
  return {
    piece,
    completionTokens: intParam(raw, 'completion_tokens', 'sim.completion_tokens', 0, 100_000),
    errorStatus: intParam(raw, 'error_status', 'sim.error_status', 400, 599),
    errorMessage,
    errorAfterChunks: intParam(raw, 'error_after_chunks', 'sim.error_after_chunks', 0),
    cutAfterChunks: intParam(raw, 'cut_after_chunks', 'sim.cut_after_chunks', 0),
    omitUsage: boolParam(raw, 'omit_usage', 'sim.omit_usage') ?? false,
    cachedTokens: intParam(raw, 'cached_tokens', 'sim.cached_tokens', 0) ?? 0,
    cacheWriteTokens: intParam(raw, 'cache_write_tokens', 'sim.cache_write_tokens', 0),
    reasoningTokens: intParam(raw, 'reasoning_tokens', 'sim.reasoning_tokens', 0, 1_000_000) ?? 0,
    ttftMs: intParam(raw, 'ttft_ms', 'sim.ttft_ms', 0, 600_000),
    interTokenMs: intParam(raw, 'inter_token_ms', 'sim.inter_token_ms', 0, 60_000),
    retryAfter: intParam(raw, 'retry_after', 'sim.retry_after', 0, 86_400),
    usageDelayMs: intParam(raw, 'usage_delay_ms', 'sim.usage_delay_ms', 0, 600_000),
    imageTokens: intParam(raw, 'image_tokens', 'sim.image_tokens', 0, 1_000_000),
    cacheWrite1hTokens: intParam(raw, 'cache_write_1h_tokens', 'sim.cache_write_1h_tokens', 0),
    promptTokens: intParam(raw, 'prompt_tokens', 'sim.prompt_tokens', 0, 1_000_000_000),
    tag: tagParam(raw.tag),
  };
}

/**
 * The chat-completion arguments OpenAI documents; with `strict`, anything else is refused. Kept apart
 * from the proxy's allow-list (services/proxy/src/providers/openai/request.ts) on purpose: the simulator
 * stands for the provider, so a shared list would let a gateway mistake pass its own test.
 */
const OPENAI_ARGUMENTS = new Set([
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
  'store',
  'metadata',
  'service_tier',
  'safety_identifier',
  'prompt_cache_key',
  'sim',
]);

/**
 * Validates a chat completion body the way the OpenAI API does; throws OpenAIError (400).
 * `strict`: unknown top-level arguments are refused like OpenAI refuses them.
 */
export function parseCompletionRequest(body: unknown, strict = false): CompletionRequest {
  if (!isObject(body)) {
    throw new OpenAIError(
      400,
      "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)",
      'invalid_request_error',
    );
  }
  const model = body.model;
  if (model === undefined || model === null || model === '') {
    throw new OpenAIError(400, 'you must provide a model parameter', 'invalid_request_error', null, null);
  }
  if (typeof model !== 'string') throw invalidType('model', 'a string', model);
  if (strict) {
    const unknown = Object.keys(body).filter((k) => !OPENAI_ARGUMENTS.has(k));
    if (unknown.length > 0) {
      throw new OpenAIError(
        400,
        `Unrecognized request argument${unknown.length > 1 ? 's' : ''} supplied: ${unknown.join(', ')}`,
        'invalid_request_error',
      );
    }
  }
  const messages = parseMessages(body.messages);
  const stream = boolParam(body, 'stream', 'stream') ?? false;
  let includeUsage = false;
  const so = body.stream_options;
  if (so !== undefined && so !== null) {
    if (!isObject(so)) throw invalidType('stream_options', 'an object', so);
    if (!stream) {
      throw new OpenAIError(
        400,
        "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        'invalid_request_error',
        'stream_options',
        null,
      );
    }
    includeUsage = boolParam(so, 'include_usage', 'stream_options.include_usage') ?? false;
  }
  intParam(body, 'n', 'n', 1, 1); // the simulator generates a single choice
  const maxTokens = intParam(body, 'max_tokens', 'max_tokens', 1);
  const maxCompletionTokens = intParam(body, 'max_completion_tokens', 'max_completion_tokens', 1);
  const limit =
    maxTokens === undefined
      ? maxCompletionTokens
      : maxCompletionTokens === undefined
        ? maxTokens
        : Math.min(maxTokens, maxCompletionTokens);
  const tool = openAiToolCall(body, messages);
  const tools = body.tool_choice === 'none' ? [] : chatToolNames(body.tools);
  const rf = body.response_format;
  const responseSchema =
    isObject(rf) && rf.type === 'json_schema' && isObject(rf.json_schema) ? rf.json_schema.schema : undefined;
  return {
    model,
    messages,
    stream,
    includeUsage,
    maxTokens: limit,
    sim: parseSim(body.sim),
    tools,
    responseSchema,
    ...(tool ? { tool } : {}),
  };
}
