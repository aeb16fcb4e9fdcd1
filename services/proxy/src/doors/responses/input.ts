import { badRequest } from '@tollgate/errors';
import { ToolNames } from './tools';

/**
 * The `input` (and `instructions`) of a Responses request as canonical chat messages.
 *
 * - A string is one user message.
 * - `message` items (with or without `type`): `input_text` / `output_text` / `refusal` parts become
 *   text, `input_image` an `image_url` part; `developer` messages become `system` messages (every
 *   provider format has those); an `assistant` message's text is its content.
 * - `function_call` items become the `tool_calls` of an assistant message (merged into the assistant
 *   message just before them), `function_call_output` items `tool` messages.
 * - `reasoning` items are dropped: they are the model's own state (often encrypted), which only an
 *   OpenAI Responses provider can read; a chat-completions or Anthropic provider never sees them.
 * - What needs state this gateway does not keep (`item_reference`, files by `file_id`) or a part the
 *   catalog does not price (`input_audio`, `input_file`) is a 400 naming the item.
 */

type Json = Record<string, unknown>;
type ChatMessage = Json & { role: string };

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const ROLES = new Set(['user', 'assistant', 'system', 'developer']);

function imagePart(p: Json, at: string): Json {
  if (typeof p.image_url !== 'string' || p.image_url.length === 0) {
    throw badRequest(
      `${at}.image_url: expected an image URL or data URL (images by file_id are not served: this gateway keeps no files)`,
      { field: `${at}.image_url` },
    );
  }
  const url: Json = { url: p.image_url };
  if (p.detail === 'low' || p.detail === 'high' || p.detail === 'auto') url.detail = p.detail;
  return { type: 'image_url', image_url: url };
}

/** A message's content (`field` names it in errors): a string, or chat parts (text and images). */
function messageContent(content: unknown, field: string): string | Json[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw badRequest(`${field}: expected a string or an array of content parts`);
  const parts: Json[] = [];
  for (let i = 0; i < content.length; i++) {
    const p: unknown = content[i];
    const pat = `${field}.${i}`;
    if (!isObject(p)) throw badRequest(`${pat}: expected a content part object`);
    if (p.type === 'input_text' || p.type === 'output_text' || p.type === 'text') {
      if (typeof p.text !== 'string') throw badRequest(`${pat}.text: expected a string`);
      parts.push({ type: 'text', text: p.text });
    } else if (p.type === 'refusal') {
      parts.push({ type: 'text', text: typeof p.refusal === 'string' ? p.refusal : '' });
    } else if (p.type === 'input_image') parts.push(imagePart(p, pat));
    else {
      throw badRequest(
        `${pat}.type: '${String(p.type)}' is not offered by this gateway (text and image parts are: input_text, input_image, output_text)`,
        { field: `${pat}.type` },
      );
    }
  }
  return parts;
}

/** Text parts only → their text joined (assistant and system content every format takes). */
const flatten = (c: string | Json[]): string | Json[] =>
  typeof c === 'string' || c.some((p) => p.type !== 'text') ? c : c.map((p) => p.text as string).join('');

function messageItem(item: Json, at: string): ChatMessage {
  const role = item.role;
  if (typeof role !== 'string' || !ROLES.has(role)) {
    throw badRequest(`${at}.role: expected 'user', 'assistant', 'system' or 'developer'`);
  }
  const content = messageContent(item.content, `${at}.content`);
  if (role === 'user') return { role, content };
  // Instructions and the model's own earlier answers: text (an image there has no chat equivalent).
  const text = flatten(content);
  if (typeof text !== 'string') throw badRequest(`${at}.content: a ${role} message may hold text parts only`);
  return { role: role === 'developer' ? 'system' : role, content: text };
}

/** An assistant message to hang `function_call` items on: the previous one if it has no tool results after it. */
function assistantFor(messages: ChatMessage[]): ChatMessage {
  const last = messages[messages.length - 1];
  if (last?.role === 'assistant') return last;
  const m: ChatMessage = { role: 'assistant', content: null };
  messages.push(m);
  return m;
}

function functionCall(item: Json, at: string, messages: ChatMessage[]): void {
  if (typeof item.call_id !== 'string' || item.call_id.length === 0)
    throw badRequest(`${at}.call_id: expected a string`);
  if (typeof item.name !== 'string' || item.name.length === 0)
    throw badRequest(`${at}.name: expected a string`);
  if (typeof item.arguments !== 'string') throw badRequest(`${at}.arguments: expected a JSON string`);
  const m = assistantFor(messages);
  const calls = (m.tool_calls as Json[] | undefined) ?? [];
  calls.push({
    id: item.call_id,
    type: 'function',
    function: {
      name: ToolNames.flat(item.name, item.namespace as string | undefined),
      arguments: item.arguments,
    },
  });
  m.tool_calls = calls;
}

/**
 * A `function_call_output` → a `tool` message with its text; images in the output (Codex's
 * `view_image`) follow in a user message, since a chat tool message holds text only.
 */
function functionOutput(item: Json, at: string): ChatMessage[] {
  if (typeof item.call_id !== 'string' || item.call_id.length === 0)
    throw badRequest(`${at}.call_id: expected a string`);
  const out = item.output;
  if (typeof out === 'string') return [{ role: 'tool', tool_call_id: item.call_id, content: out }];
  if (!Array.isArray(out)) throw badRequest(`${at}.output: expected a string or an array of content parts`);
  const parts = messageContent(out, `${at}.output`) as Json[];
  const text = parts
    .filter((p) => p.type === 'text')
    .map((p) => p.text as string)
    .join('');
  const images = parts.filter((p) => p.type !== 'text');
  const tool: ChatMessage = { role: 'tool', tool_call_id: item.call_id, content: text };
  return images.length === 0 ? [tool] : [tool, { role: 'user', content: images }];
}

/** `instructions` and `input` → chat messages (at least one). */
export function translateInput(input: unknown, instructions: unknown): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (instructions !== undefined && instructions !== null) {
    if (typeof instructions !== 'string') throw badRequest('instructions: expected a string');
    if (instructions.length > 0) messages.push({ role: 'system', content: instructions });
  }
  if (input === undefined || input === null) throw badRequest('input: required');
  if (typeof input === 'string') {
    messages.push({ role: 'user', content: input });
    return messages;
  }
  if (!Array.isArray(input)) throw badRequest('input: expected a string or an array of input items');
  for (let i = 0; i < input.length; i++) {
    const item: unknown = input[i];
    const at = `input.${i}`;
    if (!isObject(item)) throw badRequest(`${at}: expected an input item object`);
    const type = item.type ?? 'message';
    if (type === 'message') messages.push(messageItem(item, at));
    else if (type === 'function_call') functionCall(item, at, messages);
    else if (type === 'function_call_output') messages.push(...functionOutput(item, at));
    else if (type === 'reasoning') continue;
    else if (type === 'item_reference') {
      throw badRequest(
        `${at}: item_reference needs stored responses, which this gateway does not keep (send the item itself)`,
        {
          field: at,
        },
      );
    } else {
      throw badRequest(`${at}.type: '${String(type)}' items are not served by this gateway`, {
        field: `${at}.type`,
      });
    }
  }
  if (messages.length === 0 || messages.every((m) => m.role === 'system')) {
    throw badRequest('input: must contain at least one message or function call output');
  }
  return messages;
}
