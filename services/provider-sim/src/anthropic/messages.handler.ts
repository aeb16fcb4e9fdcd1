import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  clientGone,
  errorHeaders,
  firstToken,
  planTokens,
  type SimDefaults,
  streamContent,
  usageDelay,
  wait,
} from '../completion/completion.handler';
import { PIECES } from '../completion/generator';
import { countText } from '../completion/prompt-tokens';
import { messagesScript } from '../script/messages-script';
import { type ScriptedCall, scriptTokens, type ToolScript } from '../script/tool-script';
import { anthropicId, simulatedError } from './anthropic-error';
import type { MessagesRequest } from './messages.request';
import { countInputTokens, messagesSeed, sampleInput, toolToCall } from './messages.tokens';

/**
 * The simulator's `POST /v1/messages`: Anthropic's Messages API, non-streamed and streamed
 * (message_start, content_block_start/delta/stop, ping, message_delta, message_stop, error), with
 * the same `sim` faults and figures as the OpenAI mode (README, "Anthropic mode").
 */
type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

export interface MessagePlan {
  /** The text pieces sent, one per text_delta (a stop sequence may shorten the last). */
  text: string[];
  tool: { id: string; name: string; input: string } | undefined;
  stopReason: StopReason;
  stopSequence: string | null;
  usage: { input: number; cacheRead: number; cacheWrite: number; output: number };
}

/** Cuts the pieces before the first stop sequence; the match itself is not sent (like the API). */
function cutAtStop(pieces: string[], stops: string[]): { pieces: string[]; stop: string | null } {
  if (stops.length === 0) return { pieces, stop: null };
  const text = pieces.join('');
  let at = -1;
  let stop: string | null = null;
  for (const s of stops) {
    const i = s.length > 0 ? text.indexOf(s) : -1;
    if (i !== -1 && (at === -1 || i < at)) [at, stop] = [i, s];
  }
  if (at === -1) return { pieces, stop: null };
  const out: string[] = [];
  let pos = 0;
  for (const p of pieces) {
    if (pos >= at) break;
    out.push(pos + p.length <= at ? p : p.slice(0, at - pos));
    pos += p.length;
  }
  return { pieces: out, stop };
}

export function planMessage(req: MessagesRequest): MessagePlan {
  const seed = messagesSeed(req);
  const plan = planTokens(seed, countInputTokens(req), req.maxTokens, req.sim);
  const cacheRead = plan.cachedTokens;
  const cacheWrite = plan.cacheWriteTokens ?? 0;
  const usage = { input: plan.promptTokens - cacheRead - cacheWrite, cacheRead, cacheWrite, output: 0 };
  const script = messagesScript(req);
  if (script !== null) return scriptedPlan(script, usage, plan.reasoningTokens);
  const tool = toolToCall(req, seed);
  if (tool) {
    // Tool calls are not cut by max_tokens in the simulator (README).
    const input = JSON.stringify(sampleInput(tool.input_schema, seed));
    usage.output = countText(tool.name) + countText(input) + plan.reasoningTokens;
    return {
      text: [],
      tool: { id: anthropicId('toolu_'), name: tool.name, input },
      stopReason: 'tool_use',
      stopSequence: null,
      usage,
    };
  }
  const all =
    req.sim.piece === undefined
      ? Array.from(plan.pieces, (p) => PIECES[p]!)
      : new Array<string>(plan.pieces.length).fill(req.sim.piece);
  const { pieces, stop } = cutAtStop(all, req.stopSequences);
  usage.output = pieces.length + plan.reasoningTokens;
  const stopReason: StopReason =
    stop !== null ? 'stop_sequence' : plan.finishReason === 'length' ? 'max_tokens' : 'end_turn';
  return { text: pieces, tool: undefined, stopReason, stopSequence: stop, usage };
}

/** A scripted answer (script/tool-script.ts): the first scripted call, or the text carrying the tool output. */
function scriptedPlan(script: ToolScript, usage: MessagePlan['usage'], reasoning: number): MessagePlan {
  usage.output = scriptTokens(script) + reasoning;
  if (script.kind === 'answer') {
    const text = script.text.match(/[\s\S]{1,16}/g) ?? [];
    return { text, tool: undefined, stopReason: 'end_turn', stopSequence: null, usage };
  }
  const call = script.calls[0] as ScriptedCall;
  return {
    text: [],
    tool: { id: anthropicId('toolu_'), name: call.name, input: call.arguments },
    stopReason: 'tool_use',
    stopSequence: null,
    usage,
  };
}

const usageJson = (u: MessagePlan['usage'], output: number) =>
  `{"input_tokens":${u.input},"cache_creation_input_tokens":${u.cacheWrite},"cache_read_input_tokens":${u.cacheRead},"output_tokens":${output}}`;

function writeError(res: ServerResponse, req: MessagesRequest, status: number): void {
  const body = JSON.stringify(simulatedError(status, req.sim.errorMessage).toJSON(anthropicId('req_')));
  res.writeHead(status, {
    ...errorHeaders(body, status === req.sim.errorStatus ? req.sim.retryAfter : undefined),
    'request-id': anthropicId('req_'),
  });
  res.end(body);
}

export async function messagesJson(
  req: IncomingMessage,
  res: ServerResponse,
  body: MessagesRequest,
  defaults: SimDefaults,
): Promise<void> {
  const { sim } = body;
  const plan = planMessage(body);
  const chunks = plan.tool ? 1 : plan.text.length;
  const delay =
    (sim.ttftMs ?? defaults.ttftMs) +
    (sim.interTokenMs ?? defaults.interTokenMs) * Math.max(chunks - 1, 0) +
    (sim.usageDelayMs ?? 0);
  if (delay > 0 && !(await wait(delay, clientGone(req, res)))) return;
  if (sim.errorStatus !== undefined) return writeError(res, body, sim.errorStatus);
  if (sim.errorAfterChunks !== undefined) return writeError(res, body, 500);
  if (sim.cutAfterChunks !== undefined) {
    res.destroy();
    return;
  }
  const content: unknown[] = [];
  if (plan.text.length > 0) content.push({ type: 'text', text: plan.text.join('') });
  if (plan.tool)
    content.push({
      type: 'tool_use',
      id: plan.tool.id,
      name: plan.tool.name,
      input: JSON.parse(plan.tool.input),
    });
  const usage = sim.omitUsage
    ? ''
    : `,"usage":${usageJson(plan.usage, plan.usage.output).slice(0, -1)},"service_tier":"standard"}`;
  const json =
    `{"id":"${anthropicId('msg_')}","type":"message","role":"assistant","model":${JSON.stringify(body.model)},` +
    `"content":${JSON.stringify(content)},"stop_reason":"${plan.stopReason}","stop_sequence":${JSON.stringify(plan.stopSequence)}${usage}}`;
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(json),
    'request-id': anthropicId('req_'),
  });
  res.end(json);
}

const event = (type: string, data: string) => `event: ${type}\ndata: ${data}\n\n`;

/** Splits a tool input's JSON into input_json_delta pieces (the API sends a first empty one). */
function jsonPieces(json: string): string[] {
  const out = [''];
  for (let i = 0; i < json.length; i += 12) out.push(json.slice(i, i + 12));
  return out;
}

export async function messagesStream(
  req: IncomingMessage,
  res: ServerResponse,
  body: MessagesRequest,
  defaults: SimDefaults,
): Promise<void> {
  const { sim } = body;
  const plan = planMessage(body);
  const pacing = await firstToken(req, res, sim, defaults);
  if (!pacing) return;
  if (sim.errorStatus !== undefined) return writeError(res, body, sim.errorStatus);

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'request-id': anthropicId('req_'),
  });
  const startUsage = sim.omitUsage ? '' : `,"usage":${usageJson(plan.usage, 1)}`;
  let out = event(
    'message_start',
    `{"type":"message_start","message":{"id":"${anthropicId('msg_')}","type":"message","role":"assistant","model":${JSON.stringify(body.model)},"content":[],"stop_reason":null,"stop_sequence":null${startUsage}}}`,
  );

  let deltas: string[];
  let blockStart: string;
  if (plan.tool) {
    blockStart = `{"type":"tool_use","id":"${plan.tool.id}","name":${JSON.stringify(plan.tool.name)},"input":{}}`;
    deltas = jsonPieces(plan.tool.input).map(
      (p) => `{"type":"input_json_delta","partial_json":${JSON.stringify(p)}}`,
    );
  } else {
    blockStart = '{"type":"text","text":""}';
    deltas = plan.text.map((t) => `{"type":"text_delta","text":${JSON.stringify(t)}}`);
  }
  const hasBlock = deltas.length > 0;
  if (hasBlock)
    out += event(
      'content_block_start',
      `{"type":"content_block_start","index":0,"content_block":${blockStart}}`,
    );
  out += event('ping', '{"type": "ping"}');

  const sent = await streamContent(
    res,
    out,
    deltas.length,
    (i) => event('content_block_delta', `{"type":"content_block_delta","index":0,"delta":${deltas[i]}}`),
    sim,
    pacing,
  );
  if (!sent) return;
  out = sent.out;
  if (sent.end === 'error') {
    const err = simulatedError(529, sim.errorMessage).toJSON(anthropicId('req_'));
    res.end(out + event('error', JSON.stringify({ type: 'error', error: err.error })));
    return;
  }
  const rest = await usageDelay(res, out, sim, req);
  if (rest === null) return;
  out = rest;
  if (hasBlock) out += event('content_block_stop', '{"type":"content_block_stop","index":0}');
  const endUsage = sim.omitUsage ? '' : `,"usage":${usageJson(plan.usage, plan.usage.output)}`;
  out += event(
    'message_delta',
    `{"type":"message_delta","delta":{"stop_reason":"${plan.stopReason}","stop_sequence":${JSON.stringify(plan.stopSequence)}}${endUsage}}`,
  );
  res.end(out + event('message_stop', '{"type":"message_stop"}'));
}
