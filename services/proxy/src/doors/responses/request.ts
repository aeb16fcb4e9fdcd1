import { badRequest } from '@tollgate/errors';
import { translateInput } from './input';
import { type ToolNames, translateToolChoice, translateTools } from './tools';

/**
 * POST /responses (the OpenAI Responses API), stateless: the request → the canonical
 * chat-completions body every provider wire format translates from, and what the answer echoes.
 *
 * Accepted and translated: `model`, `input`, `instructions`, `tools` (function, namespace), `tool_choice`,
 * `parallel_tool_calls`, `max_output_tokens`, `temperature`, `top_p`, `text.format` (→ `response_format`),
 * `text.verbosity`, `reasoning.effort` (→ `reasoning_effort`), `user` / `safety_identifier`, `stream`,
 * and OpenRouter's routing fields `models` and `provider` (as on chat completions).
 * Accepted, echoed, not forwarded: `metadata`, `include`, `reasoning.summary`, `prompt_cache_key`,
 * `prompt_cache_retention`, `client_metadata` (Codex), `store: false`, `background: false`,
 * `truncation: 'disabled'`, `service_tier: 'auto' | 'default'`, `stream_options`.
 * Refused with a 400 naming the field (they need state or services this gateway does not offer):
 * `previous_response_id`, `conversation`, `prompt`, `store: true`, `background: true`,
 * `truncation: 'auto'`, `max_tool_calls`, `top_logprobs`, other service tiers. Unknown fields are
 * dropped, as on the chat door.
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const given = (v: unknown) => v !== undefined && v !== null;

/** What the Response object repeats of the request (OpenAI's answer echoes these). */
export interface ResponseEcho {
  instructions: string | null;
  metadata: Record<string, string>;
  tools: unknown[];
  tool_choice: unknown;
  parallel_tool_calls: boolean;
  max_output_tokens: number | null;
  temperature: number | null;
  top_p: number | null;
  text: Json;
  reasoning: { effort: string | null; summary: string | null };
  user: string | null;
  prompt_cache_key: string | null;
}

export interface ResponsesRequest {
  /** The canonical chat-completions body. */
  chat: Json;
  stream: boolean;
  echo: ResponseEcho;
  /** Hosted tools offered but withheld from the provider (types, in order). */
  withheld: string[];
  /** Namespaced functions' flattened names → their Responses names. */
  names: ToolNames;
  /** `include` asked for `reasoning.encrypted_content` (Codex does). */
  encryptedReasoning: boolean;
}

function refuseStateful(body: Json): void {
  const refuse = (field: string, why: string) => {
    throw badRequest(`${field}: ${why}`, { field });
  };
  const stateless = 'this gateway is stateless (it keeps no responses or conversations)';
  if (given(body.previous_response_id)) refuse('previous_response_id', `${stateless}: send the whole input`);
  if (given(body.conversation)) refuse('conversation', `${stateless}: send the whole input`);
  if (given(body.prompt)) refuse('prompt', 'stored prompt templates are not served by this gateway');
  if (body.store === true) refuse('store', `${stateless}: set store to false or leave it out`);
  if (body.background === true)
    refuse('background', 'background responses need stored responses, which this gateway does not keep');
  if (given(body.truncation) && body.truncation !== 'disabled')
    refuse('truncation', "only 'disabled' is served");
  if (given(body.max_tool_calls))
    refuse('max_tool_calls', 'not served by this gateway (hosted tools are not run)');
  if (given(body.top_logprobs)) refuse('top_logprobs', 'log probabilities are not served on /responses');
  if (given(body.service_tier) && body.service_tier !== 'auto' && body.service_tier !== 'default') {
    refuse(
      'service_tier',
      "only 'auto' and 'default' are served (other tiers are billed at prices the catalog does not have)",
    );
  }
}

function optionalNumber(body: Json, field: string, min: number, max: number): number | null {
  const v = body[field];
  if (!given(v)) return null;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw badRequest(`${field}: expected a number from ${min} to ${max}`);
  }
  return v;
}

function metadataOf(v: unknown): Record<string, string> {
  if (!given(v)) return {};
  if (!isObject(v)) throw badRequest('metadata: expected an object of strings');
  const keys = Object.keys(v);
  if (keys.length > 16) throw badRequest('metadata: at most 16 keys');
  for (const k of keys) {
    if (k.length > 64) throw badRequest(`metadata.${k.slice(0, 64)}: keys are at most 64 characters`);
    const s = v[k];
    if (typeof s !== 'string' || s.length > 512)
      throw badRequest(`metadata.${k}: expected a string of at most 512 characters`);
  }
  return v as Record<string, string>;
}

/** `text.format` → chat `response_format` (undefined for plain text), `text.verbosity` → `verbosity`. */
function textOptions(text: unknown, chat: Json): Json {
  if (!given(text)) return { format: { type: 'text' } };
  if (!isObject(text)) throw badRequest('text: expected an object');
  const format = text.format;
  if (given(format)) {
    if (!isObject(format)) throw badRequest('text.format: expected an object');
    if (format.type === 'json_schema') {
      if (typeof format.name !== 'string' || format.name.length === 0)
        throw badRequest('text.format.name: expected a string');
      if (!isObject(format.schema)) throw badRequest('text.format.schema: expected a JSON schema object');
      const schema: Json = { name: format.name, schema: format.schema };
      if (typeof format.strict === 'boolean') schema.strict = format.strict;
      if (typeof format.description === 'string') schema.description = format.description;
      chat.response_format = { type: 'json_schema', json_schema: schema };
    } else if (format.type === 'json_object') chat.response_format = { type: 'json_object' };
    else if (format.type !== 'text')
      throw badRequest(`text.format.type: expected 'text', 'json_schema' or 'json_object'`);
  }
  if (given(text.verbosity)) {
    if (text.verbosity !== 'low' && text.verbosity !== 'medium' && text.verbosity !== 'high') {
      throw badRequest(`text.verbosity: expected 'low', 'medium' or 'high'`);
    }
    chat.verbosity = text.verbosity;
  }
  return { ...text, format: given(format) ? format : { type: 'text' } };
}

const EFFORTS = new Set(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']);
const SUMMARIES = new Set(['auto', 'concise', 'detailed']);

function reasoningOptions(reasoning: unknown, chat: Json): ResponseEcho['reasoning'] {
  if (!given(reasoning)) return { effort: null, summary: null };
  if (!isObject(reasoning)) throw badRequest('reasoning: expected an object');
  const { effort, summary } = reasoning;
  if (given(effort) && (typeof effort !== 'string' || !EFFORTS.has(effort))) {
    throw badRequest(`reasoning.effort: expected one of ${[...EFFORTS].join(', ')}`);
  }
  const sum = summary ?? reasoning.generate_summary;
  if (given(sum) && (typeof sum !== 'string' || !SUMMARIES.has(sum))) {
    throw badRequest(`reasoning.summary: expected 'auto', 'concise' or 'detailed'`);
  }
  if (typeof effort === 'string') chat.reasoning_effort = effort;
  return { effort: (effort as string | undefined) ?? null, summary: (sum as string | undefined) ?? null };
}

function includeOf(v: unknown): string[] {
  if (!given(v)) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string'))
    throw badRequest('include: expected an array of strings');
  return v as string[];
}

/** Parses and translates a POST /responses body; throws a 400 AppError naming the field. */
export function parseResponsesRequest(body: unknown): ResponsesRequest {
  if (!isObject(body)) throw badRequest('Request body must be a JSON object');
  if (body.model === undefined) throw badRequest('model: required');
  if (typeof body.model !== 'string' || body.model.length === 0)
    throw badRequest('model: expected a non-empty string');
  refuseStateful(body);
  if (given(body.stream) && typeof body.stream !== 'boolean') throw badRequest('stream: expected a boolean');
  const stream = body.stream === true;
  const messages = translateInput(body.input, body.instructions);
  const chat: Json = { model: body.model, messages, stream };
  const tools = translateTools(body.tools);
  const choice = translateToolChoice(body.tool_choice, tools);
  if (tools.tools !== null) chat.tools = tools.tools;
  if (choice !== undefined && tools.tools !== null) chat.tool_choice = choice;
  if (given(body.parallel_tool_calls)) {
    if (typeof body.parallel_tool_calls !== 'boolean')
      throw badRequest('parallel_tool_calls: expected a boolean');
    if (tools.tools !== null) chat.parallel_tool_calls = body.parallel_tool_calls;
  }
  const maxOutput = body.max_output_tokens;
  if (given(maxOutput) && (typeof maxOutput !== 'number' || !Number.isInteger(maxOutput) || maxOutput < 1)) {
    throw badRequest('max_output_tokens: expected a positive integer');
  }
  if (typeof maxOutput === 'number') chat.max_completion_tokens = maxOutput;
  const temperature = optionalNumber(body, 'temperature', 0, 2);
  const topP = optionalNumber(body, 'top_p', 0, 1);
  if (temperature !== null) chat.temperature = temperature;
  if (topP !== null) chat.top_p = topP;
  const text = textOptions(body.text, chat);
  const reasoning = reasoningOptions(body.reasoning, chat);
  const user = body.user ?? body.safety_identifier;
  if (given(user) && typeof user !== 'string') throw badRequest('user: expected a string');
  if (typeof user === 'string') chat.user = user;
  // OpenRouter's routing fields (fallback models, provider preferences), read by the plan, never forwarded.
  if (given(body.models)) chat.models = body.models;
  if (given(body.provider)) chat.provider = body.provider;
  if (isObject(body.sim)) chat.sim = body.sim;
  const include = includeOf(body.include);
  return {
    chat,
    stream,
    withheld: tools.withheld,
    names: tools.names,
    encryptedReasoning: include.includes('reasoning.encrypted_content'),
    echo: {
      instructions: typeof body.instructions === 'string' ? body.instructions : null,
      metadata: metadataOf(body.metadata),
      tools: Array.isArray(body.tools) ? body.tools : [],
      tool_choice: body.tool_choice ?? 'auto',
      parallel_tool_calls: body.parallel_tool_calls !== false,
      max_output_tokens: typeof maxOutput === 'number' ? maxOutput : null,
      temperature,
      top_p: topP,
      text,
      reasoning,
      user: typeof user === 'string' ? user : null,
      prompt_cache_key: typeof body.prompt_cache_key === 'string' ? body.prompt_cache_key : null,
    },
  };
}
