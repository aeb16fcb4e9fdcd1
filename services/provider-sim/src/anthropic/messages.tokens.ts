import { type CountBudget, newBudget } from '@tollgate/tokens';
import { PIECES, promptSeed } from '../completion/generator';
import {
  countText,
  REPLY_PRIMING_TOKENS,
  type SimMessage,
  TOKENS_PER_IMAGE,
  TOKENS_PER_MESSAGE,
} from '../completion/prompt-tokens';
import type { AnthropicBlock, AnthropicTool, MessagesRequest } from './messages.request';

/**
 * The simulator's figures for a Messages request. Anthropic does not publish its tokenizer, so the
 * simulator uses its own documented count, the same formula as the OpenAI mode: o200k tokens of the
 * system prompt and of every message's role and content (text; 85 per image; a tool_use's name and
 * input JSON; a tool_result's id and content), 3 per message (the system prompt counts as one), 3 to
 * prime the reply, plus the tools' JSON. The text is seeded like the OpenAI mode's (the system prompt
 * as a first `system` message), so one conversation gets the same words through either wire format.
 */
function blockTokens(content: string | AnthropicBlock[] | undefined, budget: CountBudget): number {
  if (content === undefined) return 0;
  if (typeof content === 'string') return countText(content, budget);
  let n = 0;
  for (const b of content) {
    if (b.type === 'text' && typeof b.text === 'string') n += countText(b.text, budget);
    else if (b.type === 'image') n += TOKENS_PER_IMAGE;
    else if (b.type === 'tool_use') n += countText(`${b.name}${JSON.stringify(b.input)}`, budget);
    else if (b.type === 'tool_result')
      n += countText(b.tool_use_id ?? '', budget) + blockTokens(b.content, budget);
  }
  return n;
}

export function countInputTokens(req: MessagesRequest): number {
  const budget = newBudget();
  let n = REPLY_PRIMING_TOKENS;
  if (req.system !== undefined)
    n += TOKENS_PER_MESSAGE + countText('system', budget) + countText(req.system, budget);
  for (const m of req.messages)
    n += TOKENS_PER_MESSAGE + countText(m.role, budget) + blockTokens(m.content, budget);
  if (req.tools.length > 0) n += countText(JSON.stringify(req.tools), budget);
  return n;
}

export function messagesSeed(req: MessagesRequest): number {
  const msgs: SimMessage[] = req.system === undefined ? [] : [{ role: 'system', content: req.system }];
  for (const m of req.messages) msgs.push(m);
  return promptSeed(msgs);
}

/** The tool the simulator calls, if any: `tool` → that one; `any`, or `auto` on a user turn that is not a tool result → one picked by the seed; `none` → none. */
export function toolToCall(req: MessagesRequest, seed: number): AnthropicTool | undefined {
  const { tools, toolChoice } = req;
  if (tools.length === 0 || toolChoice.type === 'none') return undefined;
  if (toolChoice.type === 'tool') return tools.find((t) => t.name === toolChoice.name);
  if (toolChoice.type === 'auto') {
    const last = req.messages.at(-1)!;
    const answersTool =
      typeof last.content !== 'string' && last.content.some((b) => b.type === 'tool_result');
    if (last.role !== 'user' || answersTool) return undefined;
  }
  return tools[seed % tools.length];
}

/** A deterministic value satisfying a (simple) JSON schema: enums' first value, words, small integers. */
export function sampleInput(schema: unknown, seed: number): unknown {
  const s = (typeof schema === 'object' && schema !== null ? schema : {}) as Record<string, unknown>;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  switch (s.type) {
    case 'string':
      return PIECES[seed % (PIECES.length - 1)]!.trim();
    case 'integer':
    case 'number':
      return 1 + (seed % 100);
    case 'boolean':
      return true;
    case 'array':
      return [sampleInput(s.items, seed >>> 1)];
    case 'object': {
      const props = (typeof s.properties === 'object' && s.properties !== null ? s.properties : {}) as Record<
        string,
        unknown
      >;
      const keys = Array.isArray(s.required) ? (s.required as string[]) : Object.keys(props);
      const out: Record<string, unknown> = {};
      keys.forEach((k, i) => {
        out[k] = sampleInput(props[k], (seed + i * 7919) >>> 0);
      });
      return out;
    }
    default:
      return null;
  }
}
