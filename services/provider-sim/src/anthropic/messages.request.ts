import { isObject, parseSim, type SimOptions } from '../completion/request';
import { OpenAIError } from '../http/openai-error';
import { AnthropicError } from './anthropic-error';

/**
 * Validation of a Messages API request (`POST /v1/messages`), written from Anthropic's public API
 * reference: the fields it documents, its pydantic-style messages (`<path>: <problem>`), and the
 * rules a translating gateway most easily breaks — no `system` role inside `messages`, unknown
 * fields refused ("Extra inputs are not permitted"), `max_tokens` required, temperature within 0..1,
 * content blocks of the documented types only, and every `tool_result` answering a `tool_use` of the
 * previous assistant turn (and every `tool_use` answered in the next user turn).
 */
export interface AnthropicBlock {
  type: string;
  text?: string;
  source?: Record<string, unknown>;
  id?: string;
  name?: string;
  input?: Record<string, unknown>;
  tool_use_id?: string;
  content?: string | AnthropicBlock[];
  is_error?: boolean;
}

interface AnthropicMessage {
  /** `system` only for the system turns Claude Code sends (with an `anthropic-beta` header). */
  role: 'user' | 'assistant' | 'system';
  content: string | AnthropicBlock[];
}

export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

type ToolChoice = { type: 'auto' | 'any' | 'none' } | { type: 'tool'; name: string };

export interface MessagesRequest {
  model: string;
  messages: AnthropicMessage[];
  /** The system prompt's text (a string, or its text blocks joined). */
  system: string | undefined;
  maxTokens: number;
  stream: boolean;
  stopSequences: string[];
  tools: AnthropicTool[];
  toolChoice: ToolChoice;
  sim: SimOptions;
}

const FIELDS = new Set([
  'model',
  'messages',
  'max_tokens',
  'system',
  'stop_sequences',
  'stream',
  'temperature',
  'top_p',
  'top_k',
  'tools',
  'tool_choice',
  'metadata',
  'thinking',
  'service_tier',
  // Claude Code 2.x sends these (context editing, effort and structured output): accepted, not acted on.
  'context_management',
  'output_config',
  'sim',
]);
const BLOCK_TYPES = ['text', 'image', 'document', 'tool_use', 'tool_result', 'thinking'];
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;

const bad = (path: string, problem: string) => new AnthropicError(400, `${path}: ${problem}`);
const required = (path: string) => bad(path, 'Field required');

function str(v: unknown, path: string): string {
  if (typeof v !== 'string') throw bad(path, 'Input should be a valid string');
  return v;
}

/** A required string field. */
function field(obj: Record<string, unknown>, key: string, path: string): string {
  if (obj[key] === undefined) throw required(path);
  return str(obj[key], path);
}

function num(obj: Record<string, unknown>, key: string, min: number, max: number): void {
  const v = obj[key];
  if (v === undefined || v === null) return;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(key, 'Input should be a valid number');
  if (v < min) throw bad(key, `Input should be greater than or equal to ${min}`);
  if (v > max) throw bad(key, `Input should be less than or equal to ${max}`);
}

function textBlock(b: Record<string, unknown>, path: string): void {
  if (b.text === undefined) throw required(`${path}.text`);
  if (str(b.text, `${path}.text`).length === 0)
    throw bad('messages', 'text content blocks must be non-empty');
}

function imageBlock(b: Record<string, unknown>, path: string): void {
  const s = b.source;
  if (!isObject(s)) throw required(`${path}.source`);
  if (s.type === 'base64') {
    field(s, 'media_type', `${path}.source.base64.media_type`);
    field(s, 'data', `${path}.source.base64.data`);
  } else if (s.type === 'url') {
    field(s, 'url', `${path}.source.url.url`);
  } else {
    throw bad(
      `${path}.source`,
      "Input tag found using 'type' does not match any of the expected tags: 'base64', 'url'",
    );
  }
}

function blocks(raw: unknown, path: string, role: string): AnthropicBlock[] | string {
  if (typeof raw === 'string') {
    if (raw.length === 0 && role === 'user') throw bad('messages', 'text content blocks must be non-empty');
    return raw;
  }
  if (!Array.isArray(raw)) throw bad(path, 'Input should be a valid string or a valid list');
  raw.forEach((b: unknown, j) => {
    const at = `${path}.${j}`;
    if (!isObject(b)) throw bad(at, 'Input should be a valid dictionary or object');
    const t = b.type;
    if (typeof t !== 'string' || !BLOCK_TYPES.includes(t)) {
      throw bad(
        at,
        `Input tag '${String(t)}' found using 'type' does not match any of the expected tags: ${BLOCK_TYPES.map((x) => `'${x}'`).join(', ')}`,
      );
    }
    if (t === 'text') textBlock(b, `${at}.text`);
    else if (t === 'image') imageBlock(b, `${at}.image`);
    else if (t === 'tool_use') {
      field(b, 'id', `${at}.tool_use.id`);
      field(b, 'name', `${at}.tool_use.name`);
      if (!isObject(b.input)) throw bad(`${at}.tool_use.input`, 'Input should be a valid dictionary');
    } else if (t === 'tool_result') {
      field(b, 'tool_use_id', `${at}.tool_result.tool_use_id`);
      if (b.content !== undefined && typeof b.content !== 'string')
        blocks(b.content, `${at}.tool_result.content`, role);
    }
  });
  return raw as AnthropicBlock[];
}

const blockList = (c: AnthropicMessage['content']): AnthropicBlock[] => (typeof c === 'string' ? [] : c);

/** tool_use ↔ tool_result pairing between consecutive turns, with Anthropic's messages. */
function checkToolPairs(messages: AnthropicMessage[]): void {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    const results = blockList(m.content).filter((b) => b.type === 'tool_result');
    if (results.length > 0) {
      const prev = i > 0 ? messages[i - 1]! : undefined;
      const uses = new Set(
        prev && prev.role === 'assistant'
          ? blockList(prev.content)
              .filter((b) => b.type === 'tool_use')
              .map((b) => b.id)
          : [],
      );
      const unknown = results.filter((r) => !uses.has(r.tool_use_id)).map((r) => r.tool_use_id);
      if (unknown.length > 0) {
        throw bad(
          `messages.${i}.content.0`,
          `unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${unknown.join(', ')}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
        );
      }
    }
    if (m.role === 'assistant' && i < messages.length - 1) {
      const next = messages[i + 1]!;
      const answered = new Set(
        blockList(next.content)
          .filter((b) => b.type === 'tool_result')
          .map((b) => b.tool_use_id),
      );
      const open = blockList(m.content)
        .filter((b) => b.type === 'tool_use' && !answered.has(b.id))
        .map((b) => b.id);
      if (open.length > 0) {
        throw bad(
          `messages.${i + 1}`,
          `\`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${open.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
      }
    }
  }
}

function parseMessages(raw: unknown, systemTurns: boolean): AnthropicMessage[] {
  if (raw === undefined) throw required('messages');
  if (!Array.isArray(raw)) throw bad('messages', 'Input should be a valid list');
  if (raw.length === 0) throw bad('messages', 'at least one message is required');
  const out = raw.map((m: unknown, i): AnthropicMessage => {
    const at = `messages.${i}`;
    if (!isObject(m)) throw bad(at, 'Input should be a valid dictionary or object');
    if (m.role === 'system' && systemTurns) {
      if (m.content === undefined) throw required(`${at}.content`);
      return { role: 'system', content: blocks(m.content, `${at}.content`, 'user') };
    }
    if (m.role === 'system') {
      throw bad(
        `${at}.role`,
        'Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.',
      );
    }
    if (m.role !== 'user' && m.role !== 'assistant')
      throw bad(`${at}.role`, "Input should be 'user' or 'assistant'");
    if (m.content === undefined) throw required(`${at}.content`);
    return { role: m.role, content: blocks(m.content, `${at}.content`, m.role) };
  });
  checkToolPairs(out);
  return out;
}

function parseSystem(raw: unknown): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === 'string') return raw;
  if (!Array.isArray(raw)) throw bad('system', 'Input should be a valid string or a valid list');
  return raw
    .map((b: unknown, j) => {
      if (!isObject(b) || b.type !== 'text') throw bad(`system.${j}`, "Input should be a 'text' block");
      textBlock(b, `system.${j}`);
      return b.text as string;
    })
    .join('\n');
}

function parseTools(raw: unknown): AnthropicTool[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw bad('tools', 'Input should be a valid list');
  return raw.map((t: unknown, i) => {
    const at = `tools.${i}`;
    if (!isObject(t)) throw bad(at, 'Input should be a valid dictionary or object');
    if (t.name === undefined) throw required(`${at}.name`);
    if (!TOOL_NAME.test(str(t.name, `${at}.name`)))
      throw bad(`${at}.name`, "String should match pattern '^[a-zA-Z0-9_-]{1,128}$'");
    if (!isObject(t.input_schema)) throw required(`${at}.input_schema`);
    if (t.input_schema.type !== 'object') throw bad(`${at}.input_schema.type`, "Input should be 'object'");
    if (t.description !== undefined) str(t.description, `${at}.description`);
    return t as unknown as AnthropicTool;
  });
}

function parseToolChoice(raw: unknown, tools: AnthropicTool[]): ToolChoice {
  if (raw === undefined || raw === null) return { type: 'auto' };
  if (tools.length === 0) throw bad('tool_choice', 'tool_choice may only be specified while providing tools');
  if (!isObject(raw)) throw bad('tool_choice', 'Input should be a valid dictionary or object');
  const t = raw.type;
  if (t === 'auto' || t === 'any' || t === 'none') return { type: t };
  if (t !== 'tool') {
    throw bad(
      'tool_choice',
      "Input tag found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'",
    );
  }
  const name = field(raw, 'name', 'tool_choice.tool.name');
  if (!tools.some((x) => x.name === name)) throw bad('tool_choice', `Tool '${name}' not found in tools`);
  return { type: 'tool', name };
}

/**
 * Validates a Messages API body; throws AnthropicError (400) naming the field. With `betas` (the
 * request carries an `anthropic-beta` header, as Claude Code's do) `role: "system"` turns inside
 * `messages` are accepted, as Claude Code sends them; without, they are refused as by the plain API.
 */
export function parseMessagesRequest(body: unknown, options: { betas?: boolean } = {}): MessagesRequest {
  if (!isObject(body))
    throw new AnthropicError(400, 'There was an error parsing the body of your request: invalid JSON');
  for (const key of Object.keys(body)) if (!FIELDS.has(key)) throw bad(key, 'Extra inputs are not permitted');
  if (body.model === undefined) throw required('model');
  const model = str(body.model, 'model');
  if (body.max_tokens === undefined) throw required('max_tokens');
  if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens)) {
    throw bad('max_tokens', 'Input should be a valid integer');
  }
  if (body.max_tokens < 1) throw bad('max_tokens', 'Input should be greater than or equal to 1');
  const messages = parseMessages(body.messages, options.betas === true);
  const system = parseSystem(body.system);
  if (body.stream !== undefined && typeof body.stream !== 'boolean')
    throw bad('stream', 'Input should be a valid boolean');
  num(body, 'temperature', 0, 1);
  num(body, 'top_p', 0, 1);
  num(body, 'top_k', 0, Number.MAX_SAFE_INTEGER);
  let stopSequences: string[] = [];
  if (body.stop_sequences !== undefined && body.stop_sequences !== null) {
    if (!Array.isArray(body.stop_sequences)) throw bad('stop_sequences', 'Input should be a valid list');
    stopSequences = body.stop_sequences.map((s: unknown, i) => str(s, `stop_sequences.${i}`));
  }
  if (body.metadata !== undefined && !isObject(body.metadata))
    throw bad('metadata', 'Input should be a valid dictionary');
  const tools = parseTools(body.tools);
  const toolChoice = parseToolChoice(body.tool_choice, tools);
  let sim: SimOptions;
  try {
    sim = parseSim(body.sim);
  } catch (err) {
    if (err instanceof OpenAIError) throw bad(err.param ?? 'sim', err.message);
    throw err;
  }
  return {
    model,
    messages,
    system,
    maxTokens: body.max_tokens,
    stream: body.stream === true,
    stopSequences,
    tools,
    toolChoice,
    sim,
  };
}
