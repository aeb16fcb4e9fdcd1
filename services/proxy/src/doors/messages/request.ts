import { badRequest } from '@tollgate/errors';
import { translateBlocks, translateTurn } from './content';

/**
 * The Anthropic Messages front door's request: Anthropic's `POST /v1/messages` body checked for the
 * fields the gateway relies on, and translated into the canonical request (an OpenAI chat-completions
 * body) that admission, the estimate and OpenAI-format providers use.
 *
 * Anthropic-format providers get the caller's body itself (`nativeBody`: only the model id replaced),
 * so nothing is lost on that path. For OpenAI-format providers the translation below decides field by
 * field (docs/api.md "Anthropic Messages API"): translated; dropped because it has no meaning for an
 * OpenAI-format provider (listed in DROPPED, documented); or untranslatable — collected in
 * `untranslatable` with the field's path, which the door answers as a 400 naming it when no
 * Anthropic-format candidate can serve the request. Nothing else is dropped.
 */
type Json = Record<string, unknown>;

export interface Untranslatable {
  /** The field's path in the caller's body (`messages.2.content.0`, `top_k`, …). */
  field: string;
  reason: string;
  /** The field is an image or a document: still read by the provider on the native path (media census). */
  media?: 'image' | 'document';
}

export interface MessagesRequest {
  /** The caller's body (the native request). */
  body: Json;
  model: string;
  stream: boolean;
  maxTokens: number;
  /** The canonical request: an OpenAI chat-completions body (same model id, `stream`, limits). */
  chat: Json;
  /** What an OpenAI-format provider cannot be given (empty when the translation is complete). */
  untranslatable: Untranslatable[];
  /** `metadata.user_id` (Claude Code: a JSON string with its device and session ids), or null. */
  userId: string | null;
}

export interface TranslateOptions {
  /** The model reasons (catalog `supported_parameters` includes `reasoning`): thinking → `reasoning_effort`. */
  reasoning: boolean;
}

/**
 * Top-level fields with no meaning for an OpenAI-format provider, dropped from the canonical request
 * (and passed through untouched to Anthropic-format providers). Why each, in docs/api.md.
 */
const DROPPED: ReadonlySet<string> = new Set([
  // Server-side edits of Anthropic's context (clearing old thinking or tool results): an OpenAI-format
  // provider keeps no context between requests; it gets the conversation as sent.
  'context_management',
  // Anthropic's priority/standard capacity choice; the gateway bills catalog prices either way.
  'service_tier',
]);

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function requiredModel(body: Json): string {
  const { model } = body;
  if (model === undefined) throw badRequest('model: Field required', { field: 'model' });
  if (typeof model !== 'string' || model.length === 0)
    throw badRequest('model: expected a non-empty string', { field: 'model' });
  return model;
}

function requiredMaxTokens(body: Json): number {
  const v = body.max_tokens;
  if (v === undefined) throw badRequest('max_tokens: Field required', { field: 'max_tokens' });
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
    throw badRequest('max_tokens: expected an integer ≥ 1', { field: 'max_tokens' });
  return v;
}

function checkMessages(body: Json): Json[] {
  const { messages } = body;
  if (messages === undefined) throw badRequest('messages: Field required', { field: 'messages' });
  if (!Array.isArray(messages) || messages.length === 0)
    throw badRequest('messages: expected a non-empty array', { field: 'messages' });
  messages.forEach((m: unknown, i) => {
    const at = `messages.${i}`;
    if (!isObj(m)) throw badRequest(`${at}: expected an object`, { field: at });
    if (m.role !== 'user' && m.role !== 'assistant' && m.role !== 'system')
      throw badRequest(`${at}.role: expected 'user', 'assistant' or 'system'`, { field: `${at}.role` });
    const c = m.content;
    if (
      typeof c !== 'string' &&
      !(Array.isArray(c) && c.every((b) => isObj(b) && typeof b.type === 'string'))
    )
      throw badRequest(`${at}.content: expected a string or an array of content blocks`, {
        field: `${at}.content`,
      });
  });
  return messages as Json[];
}

/** `metadata.user_id` (a string of at most 512 characters, as Anthropic documents), or null. */
function userIdOf(body: Json): string | null {
  const meta = body.metadata;
  if (meta === undefined || meta === null) return null;
  if (!isObj(meta)) throw badRequest('metadata: expected an object', { field: 'metadata' });
  const id = meta.user_id;
  if (id === undefined || id === null) return null;
  if (typeof id !== 'string' || id.length > 512)
    throw badRequest('metadata.user_id: expected a string of at most 512 characters', {
      field: 'metadata.user_id',
    });
  return id;
}

/** Parses and checks a Messages body and builds its canonical (OpenAI chat) form. */
export function parseMessagesRequest(body: unknown, options: TranslateOptions): MessagesRequest {
  if (!isObj(body)) throw badRequest('Request body must be a JSON object');
  const model = requiredModel(body);
  const maxTokens = requiredMaxTokens(body);
  const messages = checkMessages(body);
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean')
    throw badRequest('stream: expected a boolean', { field: 'stream' });
  const userId = userIdOf(body);
  const stream = body.stream === true;
  const out: Untranslatable[] = [];
  const chat: Json = { model, messages: canonicalMessages(body, messages, out), stream };
  chat[options.reasoning ? 'max_completion_tokens' : 'max_tokens'] = maxTokens;
  translateOptions(body, chat, out, options);
  if (userId !== null) chat.user = userId;
  return { body, model, stream, maxTokens, chat, untranslatable: out, userId };
}

/** `system` then the turns, in OpenAI's roles. */
function canonicalMessages(body: Json, messages: Json[], out: Untranslatable[]): Json[] {
  const result: Json[] = [];
  const system = body.system;
  if (system !== undefined && system !== null) {
    if (typeof system === 'string') {
      if (system.length > 0) result.push({ role: 'system', content: system });
    } else if (Array.isArray(system)) {
      const text = translateBlocks(system, 'system', 'system', out);
      if (text.length > 0) result.push({ role: 'system', content: text });
    } else throw badRequest('system: expected a string or an array of text blocks', { field: 'system' });
  }
  messages.forEach((m, i) => {
    for (const msg of translateTurn(m, `messages.${i}`, out)) result.push(msg);
  });
  return result;
}

const TOP_LEVEL = new Set([
  'model',
  'messages',
  'max_tokens',
  'system',
  'stream',
  'metadata',
  'stop_sequences',
  'temperature',
  'top_p',
  'tools',
  'tool_choice',
  'thinking',
  'output_config',
  'sim',
]);

/** Sampling, stop sequences, tools, thinking and output options; unknown fields are untranslatable. */
function translateOptions(body: Json, chat: Json, out: Untranslatable[], options: TranslateOptions): void {
  for (const key of Object.keys(body)) {
    if (TOP_LEVEL.has(key) || DROPPED.has(key) || body[key] === undefined) continue;
    out.push({ field: key, reason: 'has no equivalent in the OpenAI chat-completions API' });
  }
  for (const k of ['temperature', 'top_p'] as const) {
    const v = body[k];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isFinite(v))
      throw badRequest(`${k}: expected a number`, { field: k });
    chat[k] = v;
  }
  const stops = body.stop_sequences;
  if (stops !== undefined && stops !== null) {
    if (!Array.isArray(stops) || !stops.every((s) => typeof s === 'string'))
      throw badRequest('stop_sequences: expected an array of strings', { field: 'stop_sequences' });
    if (stops.length > 0) chat.stop = stops;
  }
  if (body.sim !== undefined) chat.sim = body.sim;
  translateTools(body, chat, out);
  translateReasoning(body, chat, out, options);
}

const TOOL_FIELDS = new Set([
  'name',
  'description',
  'input_schema',
  'type',
  'cache_control',
  'defer_loading',
  'strict',
]);

/**
 * Anthropic's server tools billed beyond tokens (web search per search, code execution per container
 * hour): the catalog prices tokens only, so they are refused on every path, the native one included
 * (as the chat door refuses `web_search_options` and the Responses door withholds hosted tools).
 */
const PER_CALL_TOOL = /^(web_search|code_execution)_/;

function translateTools(body: Json, chat: Json, out: Untranslatable[]): void {
  const tools = body.tools;
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools)) throw badRequest('tools: expected an array', { field: 'tools' });
    const fns: Json[] = [];
    tools.forEach((t: unknown, i) => {
      const at = `tools.${i}`;
      if (!isObj(t) || typeof t.name !== 'string')
        throw badRequest(`${at}: expected a tool with a name`, { field: at });
      if (typeof t.type === 'string' && PER_CALL_TOOL.test(t.type))
        throw badRequest(
          `${at}.type: Anthropic's server tool '${t.type}' is not offered by this gateway (Anthropic bills it per call or per container hour, which the catalog does not price)`,
          { field: `${at}.type` },
        );
      if (t.type !== undefined && t.type !== null && t.type !== 'custom') {
        out.push({
          field: `${at}.type`,
          reason: `Anthropic's server tool '${String(t.type)}' runs only on Anthropic`,
        });
        return;
      }
      for (const k of Object.keys(t))
        if (!TOOL_FIELDS.has(k))
          out.push({ field: `${at}.${k}`, reason: 'has no equivalent in OpenAI tools' });
      const fn: Json = {
        name: t.name,
        parameters: isObj(t.input_schema) ? t.input_schema : { type: 'object' },
      };
      if (typeof t.description === 'string') fn.description = t.description;
      if (typeof t.strict === 'boolean') fn.strict = t.strict;
      fns.push({ type: 'function', function: fn });
    });
    if (fns.length > 0) chat.tools = fns;
  }
  const choice = body.tool_choice;
  if (choice === undefined || choice === null) return;
  if (!isObj(choice)) throw badRequest('tool_choice: expected an object', { field: 'tool_choice' });
  if (choice.type === 'auto') chat.tool_choice = 'auto';
  else if (choice.type === 'any') chat.tool_choice = 'required';
  else if (choice.type === 'none') chat.tool_choice = 'none';
  else if (choice.type === 'tool' && typeof choice.name === 'string')
    chat.tool_choice = { type: 'function', function: { name: choice.name } };
  else
    throw badRequest("tool_choice.type: expected 'auto', 'any', 'tool' (with a name) or 'none'", {
      field: 'tool_choice.type',
    });
  if (choice.disable_parallel_tool_use === true && chat.tools !== undefined) chat.parallel_tool_calls = false;
}

type Effort = 'low' | 'medium' | 'high';

/** A thinking budget as OpenAI's effort: < 4k tokens low, < 16k medium, else high. */
const effortOfBudget = (budget: number): Effort =>
  budget < 4096 ? 'low' : budget < 16384 ? 'medium' : 'high';

function effortOfLevel(level: unknown): Effort | null {
  if (level === 'low' || level === 'medium' || level === 'high') return level;
  if (level === 'xhigh' || level === 'max') return 'high';
  return null;
}

/**
 * `thinking` and `output_config` → `reasoning_effort` (reasoning models only: for a model that does
 * not reason the thinking settings have nothing to configure and are dropped, as documented) and
 * `response_format` for `output_config.format`.
 */
function translateReasoning(body: Json, chat: Json, out: Untranslatable[], options: TranslateOptions): void {
  const thinking = body.thinking;
  const config = body.output_config;
  let effort: Effort | null = null;
  if (thinking !== undefined && thinking !== null) {
    if (!isObj(thinking)) throw badRequest('thinking: expected an object', { field: 'thinking' });
    if (thinking.type === 'enabled') {
      const budget = thinking.budget_tokens;
      if (typeof budget !== 'number' || !Number.isInteger(budget) || budget < 1)
        throw badRequest('thinking.budget_tokens: expected a positive integer', {
          field: 'thinking.budget_tokens',
        });
      effort = effortOfBudget(budget);
    } else if (thinking.type === 'adaptive') effort = 'medium';
    else if (thinking.type !== 'disabled')
      throw badRequest("thinking.type: expected 'enabled', 'adaptive' or 'disabled'", {
        field: 'thinking.type',
      });
  }
  if (config !== undefined && config !== null) {
    if (!isObj(config)) throw badRequest('output_config: expected an object', { field: 'output_config' });
    for (const key of Object.keys(config)) {
      if (key === 'effort') {
        const level = effortOfLevel(config.effort);
        if (level === null && config.effort !== undefined && config.effort !== null)
          throw badRequest("output_config.effort: expected 'low', 'medium', 'high', 'xhigh' or 'max'", {
            field: 'output_config.effort',
          });
        // The effort applies unless thinking is switched off.
        if (level !== null && !(isObj(thinking) && thinking.type === 'disabled')) effort = level;
      } else if (key === 'format') outputFormat(config.format, chat, out);
      else
        out.push({
          field: `output_config.${key}`,
          reason: 'has no equivalent in the OpenAI chat-completions API',
        });
    }
  }
  if (effort !== null && options.reasoning) chat.reasoning_effort = effort;
}

function outputFormat(format: unknown, chat: Json, out: Untranslatable[]): void {
  if (format === undefined || format === null) return;
  if (isObj(format) && format.type === 'json_schema' && isObj(format.schema)) {
    chat.response_format = {
      type: 'json_schema',
      json_schema: { name: 'output', schema: format.schema, strict: true },
    };
    return;
  }
  out.push({
    field: 'output_config.format',
    reason: "only {type: 'json_schema', schema} has an OpenAI equivalent",
  });
}

/**
 * The body for an Anthropic-format provider: the caller's own, with the provider's model id (and the
 * simulator's `sim` field only for `simulator: true` providers).
 */
export function nativeBody(body: Json, upstreamModel: string, simulator: boolean): Json {
  const out: Json = { ...body, model: upstreamModel };
  if (!simulator) delete out.sim;
  return out;
}
