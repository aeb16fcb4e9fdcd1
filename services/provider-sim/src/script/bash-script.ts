/**
 * A scripted agent turn, so a real agent loop (Claude Code, the Agents SDK, …) can run against the
 * simulator: when the request offers a tool named `Bash` and its last user turn contains the marker
 * `[sim:bash] <command>` (the rest of that line), the answer is a call of `Bash` with
 * `{"command": <command>, "description": …}`; when the last turn is the result of such a call, the
 * answer is the text `Bash printed: <the result's text>` (Claude Code's `<system-reminder>` blocks
 * removed) and the turn ends. Both wire formats: Anthropic's `tool_use` / `tool_result` blocks and
 * OpenAI's `tool_calls` / `tool` messages.
 */
export const BASH_MARKER = '[sim:bash]';
export const BASH_TOOL = 'Bash';

export type BashScript = { kind: 'call'; command: string } | { kind: 'answer'; text: string };

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The command after the marker in `text`, or null. */
function commandIn(text: string): string | null {
  const at = text.lastIndexOf(BASH_MARKER);
  if (at === -1) return null;
  const rest = text.slice(at + BASH_MARKER.length);
  const end = rest.indexOf('\n');
  const command = (end === -1 ? rest : rest.slice(0, end)).trim();
  return command.length > 0 ? command : null;
}

/** Text of a string or of the text parts/blocks of a content array. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((b): b is Json => isObj(b) && typeof b.text === 'string')
    .map((b) => b.text as string)
    .join('\n');
}

const REMINDER = /<system-reminder>[\s\S]*?<\/system-reminder>/g;

export const answerText = (result: string): string => `Bash printed: ${result.replace(REMINDER, '').trim()}`;

/** The input of the scripted call. */
export const bashInput = (command: string): Json => ({
  command,
  description: 'Run the command the user asked for',
});

/** Anthropic form: `messages` of a Messages request, the names of its tools. */
export function scriptOfMessages(messages: readonly Json[], tools: readonly string[]): BashScript | null {
  if (!tools.includes(BASH_TOOL)) return null;
  const last = messages.at(-1);
  if (last?.role !== 'user') return null;
  const blocks = Array.isArray(last.content) ? (last.content as unknown[]) : [];
  const prev = messages.at(-2);
  const bashIds = new Set(
    (Array.isArray(prev?.content) ? (prev.content as unknown[]) : [])
      .filter((b): b is Json => isObj(b) && b.type === 'tool_use' && b.name === BASH_TOOL)
      .map((b) => b.id),
  );
  const result = blocks.find(
    (b): b is Json => isObj(b) && b.type === 'tool_result' && bashIds.has(b.tool_use_id),
  );
  if (result) return { kind: 'answer', text: answerText(textOf(result.content)) };
  const command = commandIn(textOf(last.content));
  return command === null ? null : { kind: 'call', command };
}

/** OpenAI form: `messages` of a chat-completions request, the names of its function tools. */
export function scriptOfChat(messages: readonly Json[], tools: readonly string[]): BashScript | null {
  if (!tools.includes(BASH_TOOL)) return null;
  const last = messages.at(-1);
  if (!last) return null;
  if (last.role === 'tool') {
    const call = messages
      .flatMap((m) =>
        m.role === 'assistant' && Array.isArray(m.tool_calls) ? (m.tool_calls as unknown[]) : [],
      )
      .find((c): c is Json => isObj(c) && c.id === last.tool_call_id);
    const fn = call && isObj(call.function) ? call.function : null;
    return fn?.name === BASH_TOOL ? { kind: 'answer', text: answerText(textOf(last.content)) } : null;
  }
  if (last.role !== 'user') return null;
  const command = commandIn(textOf(last.content));
  return command === null ? null : { kind: 'call', command };
}

/** Names of an OpenAI `tools` array's functions. */
export function chatToolNames(tools: unknown): string[] {
  if (!Array.isArray(tools)) return [];
  return tools
    .map((t) =>
      isObj(t) && isObj(t.function) && typeof t.function.name === 'string' ? t.function.name : null,
    )
    .filter((n): n is string => n !== null);
}

/** A text in stream pieces: words with their leading space. */
export const textPieces = (text: string): string[] => text.match(/\s*\S+/g) ?? [];
