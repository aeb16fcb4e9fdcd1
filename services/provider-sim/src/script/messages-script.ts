import type { MessagesRequest } from '../anthropic/messages.request';
import { type ScriptTurn, type ToolScript, textOf, toolScript } from './tool-script';

/**
 * The tool script (tool-script.ts) of an Anthropic Messages request: a user turn made of
 * `tool_result` blocks is the tool's answer. Messages answers one `tool_use` per turn in the
 * simulator, so only the first scripted call is made.
 */
export function messagesScript(req: MessagesRequest): ToolScript | null {
  if (req.tools.length === 0) return null;
  const turns: ScriptTurn[] = [];
  for (const m of req.messages) {
    if (m.role === 'assistant') {
      turns.push({ role: 'assistant', text: textOf(m.content) });
      continue;
    }
    const results = typeof m.content === 'string' ? [] : m.content.filter((b) => b.type === 'tool_result');
    if (results.length > 0)
      turns.push({ role: 'tool', text: results.map((b) => textOf(b.content)).join('\n') });
    else turns.push({ role: 'user', text: textOf(m.content) });
  }
  const offered = req.toolChoice.type === 'none' ? [] : req.tools.map((t) => t.name);
  const script = toolScript(turns, offered);
  return script?.kind === 'calls' ? { kind: 'calls', calls: script.calls.slice(0, 1) } : script;
}
