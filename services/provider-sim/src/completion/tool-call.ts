import type { ServerResponse } from 'node:http';
import { anthropicId } from '../anthropic/anthropic-error';
import type { AnthropicTool, MessagesRequest } from '../anthropic/messages.request';
import { sampleInput, toolToCall } from '../anthropic/messages.tokens';
import { type CompletionPlan, completionId, usageJson } from './completion.handler';
import { promptSeed } from './generator';
import { countText, type SimMessage } from './prompt-tokens';
import { type CompletionRequest, isObject } from './request';

/**
 * The OpenAI mode's tool call, chosen as the Anthropic mode chooses one (messages.tokens.ts
 * `toolToCall`) but only when the caller forces one: a named `tool_choice` → that function;
 * `required` → one picked by the prompt's seed; `auto` (the default), `none` or no tools → text, as
 * before (existing OpenAI-mode tests send tools without expecting a call).
 * Its arguments satisfy the function's JSON schema (`sampleInput`).
 */
export interface SimToolCall {
  id: string;
  name: string;
  arguments: string;
}

function toolsOf(raw: unknown): AnthropicTool[] {
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((t: unknown) =>
    isObject(t) && isObject(t.function) && typeof t.function.name === 'string'
      ? [
          {
            name: t.function.name,
            input_schema: (isObject(t.function.parameters) ? t.function.parameters : {}) as Record<
              string,
              unknown
            >,
          },
        ]
      : [],
  );
}

function choiceOf(raw: unknown): MessagesRequest['toolChoice'] {
  if (raw === 'none') return { type: 'none' };
  if (raw === 'required') return { type: 'any' };
  if (isObject(raw) && isObject(raw.function) && typeof raw.function.name === 'string')
    return { type: 'tool', name: raw.function.name };
  return { type: 'auto' };
}

export function openAiToolCall(
  body: Record<string, unknown>,
  messages: SimMessage[],
): SimToolCall | undefined {
  const tools = toolsOf(body.tools);
  const forced = body.tool_choice === 'required' || isObject(body.tool_choice);
  if (tools.length === 0 || !forced) return undefined;
  const last = messages.at(-1);
  const seed = promptSeed(messages);
  const request = {
    tools,
    toolChoice: choiceOf(body.tool_choice),
    // Only what toolToCall reads: the last turn's role and whether it answers a tool.
    messages: [
      {
        role: last?.role === 'user' ? 'user' : 'assistant',
        content: last?.role === 'tool' ? [{ type: 'tool_result' }] : '',
      },
    ],
  } as unknown as MessagesRequest;
  const tool = toolToCall(request, seed);
  if (!tool) return undefined;
  return {
    id: `call_${anthropicId('').slice(0, 24)}`,
    name: tool.name,
    arguments: JSON.stringify(sampleInput(tool.input_schema, seed)),
  };
}

/** The answer calling `tool` (JSON, or a stream of role, call and finish chunks, usage, [DONE]). */
export function writeToolCall(
  res: ServerResponse,
  body: CompletionRequest,
  tool: SimToolCall,
  plan: CompletionPlan,
): void {
  const output = countText(tool.name) + countText(tool.arguments) + plan.reasoningTokens;
  const usage = usageJson({ ...plan, completionTokens: output });
  const created = Math.floor(Date.now() / 1000);
  const id = completionId();
  const call = { id: tool.id, type: 'function', function: { name: tool.name, arguments: tool.arguments } };
  if (!body.stream) {
    const json = JSON.stringify({
      id,
      object: 'chat.completion',
      created,
      model: body.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: null, tool_calls: [call], refusal: null },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      ...(body.sim.omitUsage ? {} : { usage: JSON.parse(usage) }),
    });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
    res.end(json);
    return;
  }
  const chunk = (delta: unknown, finish: string | null, extra = {}) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...extra })}\n\n`;
  let out = chunk({ role: 'assistant', content: null }, null);
  out += chunk({ tool_calls: [{ index: 0, ...call, function: { name: tool.name, arguments: '' } }] }, null);
  for (let i = 0; i < tool.arguments.length; i += 12)
    out += chunk(
      { tool_calls: [{ index: 0, function: { arguments: tool.arguments.slice(i, i + 12) } }] },
      null,
    );
  out += chunk({}, 'tool_calls');
  if (body.includeUsage && !body.sim.omitUsage)
    out += `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(body.model)},"choices":[],"usage":${usage}}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.end(`${out}data: [DONE]\n\n`);
}
