import { countText } from '../completion/prompt-tokens';

/**
 * Scripted function calls, so a real agent loop (Codex, the Agents SDK, an AI SDK tool call) can run
 * against the simulator on every endpoint (chat completions, Anthropic Messages, Responses).
 *
 * The user's last message scripts the call with a marker:
 *
 *     Run it. <sim:call name="exec_command">{"cmd":"echo hi"}</sim:call>
 *
 * - The last user turn holds one or more markers and no tool result came after it: the answer calls
 *   each named tool that the request offers (in marker order, arguments as written; a marker naming a
 *   tool that is not offered is ignored).
 * - A tool result came after it (the agent ran the tool and sent its output back): the answer is the
 *   text `Tool output: <the last tool result's text>` (at most 2,000 characters of it), so the final
 *   answer carries what the tool produced.
 * - No marker: the endpoint's usual behaviour.
 *
 * Tokens: a call counts its name and argument JSON, an answer its text (the simulator's o200k count).
 */

export interface ScriptTurn {
  role: 'user' | 'assistant' | 'tool';
  text: string;
}

export interface ScriptedCall {
  name: string;
  /** JSON text of the arguments. */
  arguments: string;
}

export type ToolScript = { kind: 'calls'; calls: ScriptedCall[] } | { kind: 'answer'; text: string };

const MARKER = /<sim:call name="([A-Za-z0-9_.-]{1,128})">([\s\S]*?)<\/sim:call>/g;
const OUTPUT_MAX = 2_000;

/** The markers of a text, in order (arguments `{}` when empty or not a JSON object). */
function markers(text: string): ScriptedCall[] {
  const out: ScriptedCall[] = [];
  for (const m of text.matchAll(MARKER)) {
    let args = (m[2] as string).trim();
    try {
      const parsed: unknown = JSON.parse(args);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) args = '{}';
      else args = JSON.stringify(parsed);
    } catch {
      args = '{}';
    }
    out.push({ name: m[1] as string, arguments: args });
  }
  return out;
}

/** What the conversation scripts, or null (no marker in the last user turn, or no offered tool named). */
export function toolScript(turns: readonly ScriptTurn[], offered: readonly string[]): ToolScript | null {
  let last = -1;
  for (let i = turns.length - 1; i >= 0; i--) {
    if (turns[i]?.role === 'user') {
      last = i;
      break;
    }
  }
  if (last === -1) return null;
  const wanted = markers((turns[last] as ScriptTurn).text);
  if (wanted.length === 0) return null;
  const results = turns.slice(last + 1).filter((t) => t.role === 'tool');
  if (results.length > 0) {
    const output = (results.at(-1) as ScriptTurn).text.trim().slice(0, OUTPUT_MAX);
    return { kind: 'answer', text: `Tool output: ${output}` };
  }
  const calls = wanted.filter((c) => offered.includes(c.name));
  return calls.length === 0 ? null : { kind: 'calls', calls };
}

/** Output tokens of a scripted answer. */
export function scriptTokens(script: ToolScript): number {
  if (script.kind === 'answer') return countText(script.text);
  let n = 0;
  for (const c of script.calls) n += countText(c.name) + countText(c.arguments);
  return n;
}

/** Text of a content value: a string, or the `text` of its parts (OpenAI, Anthropic and Responses parts alike). */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let s = '';
  for (const p of content) {
    const part = p as { text?: unknown; content?: unknown } | null;
    if (typeof part?.text === 'string') s += part.text;
    else if (part?.content !== undefined) s += textOf(part.content);
  }
  return s;
}

let callCounter = 0;
/** A unique call id with the endpoint's prefix (`call_`, `toolu_`). */
export function callId(prefix: string): string {
  callCounter = (callCounter + 1) % 1_000_000_000;
  return `${prefix}sim${Date.now().toString(36)}${callCounter.toString(36)}`;
}
