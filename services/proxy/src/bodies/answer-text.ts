import { SseReader } from '../providers/sse';

/**
 * The text of an answer as a person reads it (opt-in bodies, issue 28), from what the door sent the
 * client: a JSON body or SSE events, in any of the doors' formats — chat completions (`choices`),
 * Anthropic Messages (`content`, `delta`), OpenAI Responses (`output`, `*.delta`). An answer that holds
 * no text (embeddings) is kept as its JSON.
 */

type Json = Record<string, unknown>;

const obj = (v: unknown): Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {};
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Text of a chat message or delta: content, reasoning, refusal, tool calls (name and arguments). */
function chatText(m: Json): string {
  let text = str(m.reasoning) + str(m.reasoning_content) + str(m.content) + str(m.refusal);
  for (const call of arr(m.tool_calls)) {
    const fn = obj(obj(call).function);
    text += str(fn.name) + str(fn.arguments);
  }
  return text;
}

/** Text of a Messages or Responses content block (text, thinking, tool input, output text). */
function blockText(b: Json): string {
  const input = b.input === undefined ? '' : JSON.stringify(b.input);
  return (
    str(b.thinking) +
    str(b.text) +
    str(b.name) +
    input +
    arr(b.content)
      .map((c) => blockText(obj(c)))
      .join('')
  );
}

/** The text of one non-streamed answer. */
function jsonText(j: Json): string {
  let text = '';
  for (const choice of arr(j.choices)) text += chatText(obj(obj(choice).message));
  for (const block of arr(j.content)) text += blockText(obj(block));
  for (const item of arr(j.output)) text += blockText(obj(item)) + str(obj(item).arguments);
  return text;
}

/** The text one stream event adds. */
function eventText(e: Json): string {
  let text = '';
  for (const choice of arr(e.choices)) text += chatText(obj(obj(choice).delta));
  const delta = e.delta;
  if (typeof delta === 'string' && typeof e.type === 'string' && e.type.endsWith('.delta')) text += delta;
  const d = obj(delta);
  text += str(d.thinking) + str(d.text) + str(d.partial_json);
  return text;
}

function parsed(text: string): Json | null {
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : null;
  } catch {
    return null;
  }
}

/**
 * The answer's text: from its SSE events when streamed (read by the proxy's one SSE reader,
 * providers/sse.ts: multi-line `data`, CRLF and a last event without its blank line included), else
 * its JSON; else the raw answer.
 */
export function answerText(raw: string, streamed: boolean): string {
  let text = '';
  if (streamed) {
    const reader = new SseReader();
    for (const { data } of [...reader.push(Buffer.from(raw)), ...reader.end()]) {
      const event = parsed(data);
      if (event) text += eventText(event);
    }
  } else {
    const j = parsed(raw);
    if (j) text = jsonText(j);
  }
  return text.length > 0 ? text : raw;
}
