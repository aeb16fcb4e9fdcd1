/**
 * Anthropic content blocks → OpenAI chat messages and content parts (the canonical request, see
 * request.ts). Dropped for OpenAI-format providers, as documented in docs/api.md: `cache_control`
 * (OpenAI caches prompt prefixes by itself; there is nothing to mark), `citations` settings, and the
 * `thinking` / `redacted_thinking` blocks of earlier assistant turns (their signatures mean something
 * only to Anthropic, and OpenAI's chat API takes no reasoning back). Blocks with no OpenAI form are
 * collected as untranslatable with their path.
 */
import type { Untranslatable } from './request';

type Json = Record<string, unknown>;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Text of text blocks (system prompt, system turns), joined by blank lines; other blocks untranslatable. */
export function translateBlocks(
  blocks: unknown[],
  path: string,
  role: string,
  out: Untranslatable[],
): string {
  const texts: string[] = [];
  blocks.forEach((b, j) => {
    if (isObj(b) && b.type === 'text' && typeof b.text === 'string') texts.push(b.text);
    else out.push({ field: `${path}.${j}`, reason: `only text blocks can be a ${role} message for OpenAI` });
  });
  return texts.join('\n\n');
}

function imagePart(b: Json, at: string, out: Untranslatable[]): Json | null {
  const s = b.source;
  if (isObj(s) && s.type === 'base64' && typeof s.media_type === 'string' && typeof s.data === 'string')
    return { type: 'image_url', image_url: { url: `data:${s.media_type};base64,${s.data}` } };
  if (isObj(s) && s.type === 'url' && typeof s.url === 'string')
    return { type: 'image_url', image_url: { url: s.url } };
  out.push({
    field: `${at}.source`,
    reason: 'only base64 and url image sources have an OpenAI form',
    media: 'image',
  });
  return null;
}

/** A document: plain text → a text part, a base64 PDF → a file part; URL and file sources are untranslatable. */
function documentParts(b: Json, at: string, out: Untranslatable[]): Json[] {
  const s = b.source;
  if (isObj(s) && s.type === 'text' && typeof s.data === 'string') return [{ type: 'text', text: s.data }];
  if (isObj(s) && s.type === 'content' && Array.isArray(s.content)) {
    const parts: Json[] = [];
    s.content.forEach((c: unknown, k) => {
      const part = userPart(c, `${at}.source.content.${k}`, out);
      if (part) parts.push(part);
    });
    return parts;
  }
  if (isObj(s) && s.type === 'base64' && s.media_type === 'application/pdf' && typeof s.data === 'string') {
    const filename = typeof b.title === 'string' && b.title.length > 0 ? b.title : 'document.pdf';
    return [{ type: 'file', file: { filename, file_data: `data:application/pdf;base64,${s.data}` } }];
  }
  out.push({
    field: `${at}.source`,
    reason: 'only text, content and base64 PDF documents have an OpenAI form',
    media: 'document',
  });
  return [];
}

/** One block of a user (or system) turn as an OpenAI content part, or null (untranslatable, recorded). */
function userPart(b: unknown, at: string, out: Untranslatable[]): Json | null {
  if (!isObj(b)) return null;
  switch (b.type) {
    case 'text':
      return { type: 'text', text: typeof b.text === 'string' ? b.text : '' };
    case 'image':
      return imagePart(b, at, out);
    default:
      out.push({ field: at, reason: `a '${String(b.type)}' block has no OpenAI form here` });
      return null;
  }
}

/**
 * A tool_result as the tool message's text. OpenAI's tool messages carry text only, so the result's
 * images and documents (Claude Code's Read of an image or a PDF) go into `media`: the user message that
 * follows the turn's tool messages, after a text part naming the tool call they came from.
 */
function toolResult(b: Json, at: string, out: Untranslatable[], media: Json[]): string {
  const c = b.content;
  let text = '';
  if (typeof c === 'string') text = c;
  else if (Array.isArray(c)) {
    const texts: string[] = [];
    const parts: Json[] = [];
    c.forEach((part: unknown, k) => {
      const path = `${at}.content.${k}`;
      if (isObj(part) && part.type === 'text' && typeof part.text === 'string') texts.push(part.text);
      else if (isObj(part) && part.type === 'document')
        for (const p of documentParts(part, path, out)) parts.push(p);
      else {
        const p = userPart(part, path, out);
        if (p) parts.push(p);
      }
    });
    text = texts.join('\n');
    if (parts.length > 0) {
      media.push({
        type: 'text',
        text: `Attachments of the result of tool call ${String(b.tool_use_id ?? '')}:`,
      });
      for (const p of parts) media.push(p);
    }
  }
  // OpenAI's tool message has no error flag: the result says so in its text.
  return b.is_error === true ? `Error: ${text}` : text;
}

function userTurn(content: unknown[], at: string, out: Untranslatable[]): Json[] {
  const messages: Json[] = [];
  const parts: Json[] = [];
  content.forEach((b, j) => {
    const path = `${at}.content.${j}`;
    if (!isObj(b)) return;
    if (b.type === 'tool_result') {
      // OpenAI wants the tool messages right after the assistant's tool calls: they come first.
      const text = toolResult(b, path, out, parts);
      messages.push({ role: 'tool', tool_call_id: String(b.tool_use_id ?? ''), content: text });
    } else if (b.type === 'document') for (const p of documentParts(b, path, out)) parts.push(p);
    else {
      const part = userPart(b, path, out);
      if (part) parts.push(part);
    }
  });
  if (parts.length > 0) messages.push({ role: 'user', content: parts });
  return messages;
}

function assistantTurn(content: unknown[], at: string, out: Untranslatable[]): Json {
  let text = '';
  const calls: Json[] = [];
  content.forEach((b, j) => {
    if (!isObj(b)) return;
    if (b.type === 'text' && typeof b.text === 'string') text += b.text;
    else if (b.type === 'tool_use') {
      const args = JSON.stringify(isObj(b.input) ? b.input : {});
      calls.push({
        id: String(b.id ?? ''),
        type: 'function',
        function: { name: String(b.name ?? ''), arguments: args },
      });
    } else if (b.type !== 'thinking' && b.type !== 'redacted_thinking')
      out.push({
        field: `${at}.content.${j}`,
        reason: `a '${String(b.type)}' block has no OpenAI form in an assistant turn`,
      });
  });
  const msg: Json = { role: 'assistant', content: text.length > 0 || calls.length === 0 ? text : null };
  if (calls.length > 0) msg.tool_calls = calls;
  return msg;
}

/** One Anthropic turn → its OpenAI messages (a user turn with tool results becomes several). */
export function translateTurn(m: Json, at: string, out: Untranslatable[]): Json[] {
  const role = m.role as 'user' | 'assistant' | 'system';
  const c = m.content as string | unknown[];
  if (typeof c === 'string') return [{ role, content: c }];
  if (role === 'system') return [{ role, content: translateBlocks(c, `${at}.content`, 'system', out) }];
  if (role === 'assistant') return [assistantTurn(c, at, out)];
  return userTurn(c, at, out);
}
