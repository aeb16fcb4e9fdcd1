import { AppError } from '@tollgate/errors';

/**
 * Chat-completion request (OpenAI wire format, as the proxy accepts it) → Anthropic Messages request.
 * Pure: no I/O. Translated: system/developer messages → top-level `system`; user content parts (text,
 * `image_url` as base64 `data:` URI or URL); assistant text + `tool_calls` → `tool_use` blocks; `tool`
 * messages → `tool_result` blocks in one user turn; consecutive turns of one role merged; `stop` →
 * `stop_sequences`; `temperature` (capped at Anthropic's 1), `top_p`; `max_tokens` /
 * `max_completion_tokens` (the smaller) or the default; prompt-caching breakpoints (`cache_control` on
 * text and image parts, as OpenRouter accepts them; a system message with one makes `system` a list of
 * blocks) and on tool definitions; `tools`, `tool_choice`
 * (`required` → `any`), `parallel_tool_calls: false` → `disable_parallel_tool_use`; `user` →
 * `metadata.user_id`. Not translatable, refused with 400 naming the field: `n` > 1, other content part
 * types, `function`-role messages, tool-call arguments that are not a JSON object. Fields without an
 * Anthropic equivalent (penalties, logit_bias, logprobs, seed, response_format, …) are not sent.
 */
const ANTHROPIC_VERSION = '2023-06-01';
/** `max_tokens` when the request has none (Anthropic requires it). */
export const DEFAULT_MAX_TOKENS = 4096;

type Json = Record<string, unknown>;
type Block = Json;

export interface BuildOptions {
  /** The provider's model id. */
  model: string;
  defaultMaxTokens?: number;
  /** Forward the simulator's `sim` object (catalog providers with `simulator: true`). */
  simulator?: boolean;
}

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const bad = (field: string, message: string) =>
  new AppError('bad_request', `${field}: ${message}`, { param: field });

const DATA_URI = /^data:([^;,]+);base64,(.*)$/s;

/**
 * A part's `cache_control` (Anthropic's prompt-caching breakpoint: `{type: 'ephemeral', ttl?: '5m' |
 * '1h'}`) as the block field, or nothing. Cache writes are billed at the catalog's cache-write price.
 */
function cacheControl(part: Json, at: string): { cache_control?: Json } {
  const cc = part.cache_control;
  if (cc === undefined || cc === null) return {};
  if (!isObj(cc) || cc.type !== 'ephemeral') throw bad(`${at}.cache_control`, "must be {type: 'ephemeral'}");
  if (cc.ttl !== undefined && cc.ttl !== '5m' && cc.ttl !== '1h')
    throw bad(`${at}.cache_control.ttl`, "must be '5m' or '1h'");
  return { cache_control: cc.ttl === undefined ? { type: 'ephemeral' } : { type: 'ephemeral', ttl: cc.ttl } };
}

function imageBlock(part: Json, at: string): Block {
  const ref = part.image_url;
  const url = isObj(ref) ? ref.url : ref;
  if (typeof url !== 'string' || url.length === 0)
    throw bad(`${at}.image_url.url`, 'must be a URL or a data: URI');
  const m = DATA_URI.exec(url);
  if (m)
    return {
      type: 'image',
      source: { type: 'base64', media_type: m[1], data: m[2] },
      ...cacheControl(part, at),
    };
  if (/^https?:\/\//i.test(url))
    return { type: 'image', source: { type: 'url', url }, ...cacheControl(part, at) };
  throw bad(`${at}.image_url.url`, 'must be an http(s) URL or a base64 data: URI');
}

/** A message's content as Anthropic blocks (text and images); '' and null give none. */
function contentBlocks(content: unknown, at: string, images: boolean): Block[] {
  if (content === undefined || content === null) return [];
  if (typeof content === 'string') return content.length > 0 ? [{ type: 'text', text: content }] : [];
  if (!Array.isArray(content)) throw bad(`${at}.content`, 'must be a string or an array of parts');
  const out: Block[] = [];
  content.forEach((part: unknown, j) => {
    const p = `${at}.content[${j}]`;
    if (!isObj(part)) throw bad(p, 'must be an object');
    if (part.type === 'text') {
      if (typeof part.text !== 'string') throw bad(`${p}.text`, 'must be a string');
      if (part.text.length > 0) out.push({ type: 'text', text: part.text, ...cacheControl(part, p) });
    } else if (part.type === 'image_url' && images) out.push(imageBlock(part, p));
    else throw bad(`${p}.type`, `'${String(part.type)}' parts cannot be sent to an Anthropic provider`);
  });
  return out;
}

function toolUseBlocks(toolCalls: unknown, at: string): Block[] {
  if (toolCalls === undefined || toolCalls === null) return [];
  if (!Array.isArray(toolCalls)) throw bad(`${at}.tool_calls`, 'must be an array');
  return toolCalls.map((call: unknown, k) => {
    const p = `${at}.tool_calls[${k}]`;
    if (!isObj(call) || !isObj(call.function)) throw bad(p, 'must be a function tool call');
    const { name, arguments: args } = call.function;
    if (typeof call.id !== 'string' || typeof name !== 'string')
      throw bad(p, 'needs an id and a function name');
    let input: unknown = {};
    if (typeof args === 'string' && args.trim().length > 0) {
      try {
        input = JSON.parse(args);
      } catch {
        input = undefined;
      }
    }
    if (!isObj(input)) throw bad(`${p}.function.arguments`, 'must be a JSON object');
    return { type: 'tool_use', id: call.id, name, input };
  });
}

function toolResultBlock(m: Json, at: string): Block {
  if (typeof m.tool_call_id !== 'string') throw bad(`${at}.tool_call_id`, 'is required for tool messages');
  const blocks = contentBlocks(m.content, at, false);
  return { type: 'tool_result', tool_use_id: m.tool_call_id, content: blocks.length > 0 ? blocks : '' };
}

function translateMessages(raw: unknown): { system: string | Block[] | undefined; messages: Json[] } {
  if (!Array.isArray(raw)) throw bad('messages', 'must be an array');
  const system: Block[][] = [];
  const messages: { role: 'user' | 'assistant'; content: Block[] }[] = [];
  const push = (role: 'user' | 'assistant', blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = messages.at(-1);
    if (last && last.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  raw.forEach((m: unknown, i) => {
    const at = `messages[${i}]`;
    if (!isObj(m)) throw bad(at, 'must be an object');
    switch (m.role) {
      case 'system':
      case 'developer': {
        const blocks = contentBlocks(m.content, at, false);
        if (blocks.length > 0) system.push(blocks);
        break;
      }
      case 'user':
        push('user', contentBlocks(m.content, at, true));
        break;
      case 'assistant':
        push('assistant', [...contentBlocks(m.content, at, false), ...toolUseBlocks(m.tool_calls, at)]);
        break;
      case 'tool':
        push('user', [toolResultBlock(m, at)]);
        break;
      default:
        throw bad(`${at}.role`, `'${String(m.role)}' messages cannot be sent to an Anthropic provider`);
    }
  });
  if (messages.length === 0)
    throw bad('messages', 'needs at least one user or assistant message with content');
  // Tool results lead their user turn, as Anthropic expects them first.
  for (const m of messages) {
    if (m.role === 'user')
      m.content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
  }
  return { system: systemField(system), messages };
}

/**
 * The top-level `system`: one string (messages joined by a blank line, a message's parts by a line
 * break), or, when a part carries a cache breakpoint, the text blocks themselves so it reaches Anthropic.
 */
function systemField(messages: Block[][]): string | Block[] | undefined {
  if (messages.length === 0) return undefined;
  if (messages.some((blocks) => blocks.some((b) => b.cache_control !== undefined))) return messages.flat();
  return messages.map((blocks) => blocks.map((b) => b.text as string).join('\n')).join('\n\n');
}

function translateTools(tools: unknown): Json[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw bad('tools', 'must be an array');
  return tools.map((t: unknown, i) => {
    if (!isObj(t) || t.type !== 'function' || !isObj(t.function) || typeof t.function.name !== 'string') {
      throw bad(`tools[${i}]`, 'must be a function tool with a name');
    }
    const f = t.function;
    const schema = isObj(f.parameters) ? f.parameters : { type: 'object', properties: {} };
    return {
      name: f.name,
      ...(typeof f.description === 'string' ? { description: f.description } : {}),
      input_schema: schema,
      ...cacheControl(t, `tools[${i}]`),
    };
  });
}

function translateToolChoice(choice: unknown, parallel: unknown): Json | undefined {
  let out: Json | undefined;
  if (choice === 'auto') out = { type: 'auto' };
  else if (choice === 'none') out = { type: 'none' };
  else if (choice === 'required') out = { type: 'any' };
  else if (isObj(choice) && isObj(choice.function) && typeof choice.function.name === 'string') {
    out = { type: 'tool', name: choice.function.name };
  } else if (choice !== undefined && choice !== null)
    throw bad('tool_choice', "must be 'auto', 'none', 'required' or a function");
  if (parallel === false) out = { ...(out ?? { type: 'auto' }), disable_parallel_tool_use: true };
  return out;
}

const positiveInt = (v: unknown, field: string): number | undefined => {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw bad(field, 'must be a positive integer');
  return v;
};

/** The Messages API body for a chat-completion `body`. */
export function buildMessagesRequest(body: Json, options: BuildOptions): Json {
  if (body.n !== undefined && body.n !== null && body.n !== 1) {
    throw bad('n', 'Anthropic providers return one choice; n must be 1');
  }
  const { system, messages } = translateMessages(body.messages);
  const a = positiveInt(body.max_tokens, 'max_tokens');
  const b = positiveInt(body.max_completion_tokens, 'max_completion_tokens');
  const out: Json = {
    model: options.model,
    max_tokens:
      a === undefined
        ? (b ?? options.defaultMaxTokens ?? DEFAULT_MAX_TOKENS)
        : b === undefined
          ? a
          : Math.min(a, b),
    messages,
  };
  if (system !== undefined) out.system = system;
  const stop = body.stop;
  if (typeof stop === 'string') out.stop_sequences = [stop];
  else if (Array.isArray(stop) && stop.length > 0)
    out.stop_sequences = stop.filter((s) => typeof s === 'string');
  if (typeof body.temperature === 'number') out.temperature = Math.min(Math.max(body.temperature, 0), 1);
  if (typeof body.top_p === 'number') out.top_p = body.top_p;
  const tools = translateTools(body.tools);
  if (tools && tools.length > 0) {
    out.tools = tools;
    const choice = translateToolChoice(body.tool_choice, body.parallel_tool_calls);
    if (choice) out.tool_choice = choice;
  }
  if (typeof body.user === 'string' && body.user.length > 0) out.metadata = { user_id: body.user };
  if (body.stream === true) out.stream = true;
  if (options.simulator === true && body.sim !== undefined) out.sim = body.sim;
  return out;
}

/** Request headers for a provider key (built once per key, like the OpenAI adapter's). */
export function messagesHeaders(apiKey: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
    'anthropic-version': ANTHROPIC_VERSION,
  };
  if (apiKey) headers['x-api-key'] = apiKey;
  return headers;
}

/** `<base path>/messages`: the catalog's base_url carries the version path (`https://api.anthropic.com/v1`). */
export const messagesPath = (baseUrl: string): string =>
  `${new URL(baseUrl).pathname.replace(/\/+$/, '')}/messages`;
