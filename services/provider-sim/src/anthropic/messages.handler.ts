import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type CompletionPlan,
  clientGone,
  errorHeaders,
  firstToken,
  planTokens,
  type SimDefaults,
  streamContent,
  usageDelay,
  wait,
  withImageTokens,
} from '../completion/completion.handler';
import { PIECES } from '../completion/generator';
import { type Charge, openCharge } from '../completion/ledger';
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
  usage: { input: number; cacheRead: number; cacheWrite: number; cacheWrite1h: number; output: number };
  /** The plan the figures come from (the charge ledger's). */
  tokens: CompletionPlan;
  images: number;
}

/** Image blocks of a Messages request. */
function imageBlocks(req: MessagesRequest): number {
  let n = 0;
  for (const m of req.messages) {
    if (typeof m.content === 'string') continue;
    for (const b of m.content) if (b.type === 'image') n++;
  }
  return n;
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
  const images = imageBlocks(req);
  const prompt = withImageTokens(countInputTokens(req), images, req.sim);
  const plan = planTokens(seed, prompt, req.maxTokens, req.sim);
  const cacheRead = plan.cachedTokens;
  const cacheWrite1h = plan.cacheWrite1hTokens;
  const cacheWrite = (plan.cacheWriteTokens ?? 0) + cacheWrite1h;
  const usage = {
    input: plan.promptTokens - cacheRead - cacheWrite,
    cacheRead,
    cacheWrite,
    cacheWrite1h,
    output: 0,
  };
  const script = messagesScript(req);
  if (script !== null) return scriptedPlan(script, usage, plan, images);
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
      tokens: plan,
      images,
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
  return { text: pieces, tool: undefined, stopReason, stopSequence: stop, usage, tokens: plan, images };
}

/** A scripted answer (script/tool-script.ts): the first scripted call, or the text carrying the tool output. */
function scriptedPlan(
  script: ToolScript,
  usage: MessagePlan['usage'],
  plan: CompletionPlan,
  images: number,
): MessagePlan {
  usage.output = scriptTokens(script) + plan.reasoningTokens;
  if (script.kind === 'answer') {
    const text = script.text.match(/[\s\S]{1,16}/g) ?? [];
    return { text, tool: undefined, stopReason: 'end_turn', stopSequence: null, usage, tokens: plan, images };
  }
  const call = script.calls[0] as ScriptedCall;
  return {
    text: [],
    tool: { id: anthropicId('toolu_'), name: call.name, input: call.arguments },
    stopReason: 'tool_use',
    stopSequence: null,
    usage,
    tokens: plan,
    images,
  };
}

const usageJson = (u: MessagePlan['usage'], output: number) =>
  `{"input_tokens":${u.input},"cache_creation_input_tokens":${u.cacheWrite},"cache_read_input_tokens":${u.cacheRead},` +
  `"cache_creation":{"ephemeral_5m_input_tokens":${u.cacheWrite - u.cacheWrite1h},"ephemeral_1h_input_tokens":${u.cacheWrite1h}},"output_tokens":${output}}`;

/** The ledger's charge of an accepted Messages request (ledger.ts): its output is Anthropic's. */
function chargeOf(body: MessagesRequest, plan: MessagePlan, stream: boolean): Charge | null {
  const { sim } = body;
  if (sim.errorStatus !== undefined || (!stream && sim.errorAfterChunks !== undefined)) return null;
  const charge = openCharge(plan.tokens, {
    model: body.model,
    format: 'anthropic',
    stream,
    sim,
    images: plan.images,
  });
  if (!stream) charge.completion = plan.usage.output;
  return charge;
}

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
  const charge = chargeOf(body, plan, false);
  if (delay > 0 && !(await wait(delay, clientGone(req, res)))) {
    if (charge) charge.state = 'client_gone';
    return;
  }
  if (sim.errorStatus !== undefined) return writeError(res, body, sim.errorStatus);
  if (sim.errorAfterChunks !== undefined) return writeError(res, body, 500);
  if (charge) charge.state = sim.cutAfterChunks !== undefined ? 'cut' : 'complete';
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
  const charge = chargeOf(body, plan, true);
  const pacing = await firstToken(req, res, sim, defaults);
  if (!pacing) {
    if (charge) charge.state = 'client_gone';
    return;
  }
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
    charge,
  );
  if (!sent) return;
  out = sent.out;
  if (sent.end === 'error') {
    const err = simulatedError(529, sim.errorMessage).toJSON(anthropicId('req_'));
    res.end(out + event('error', JSON.stringify({ type: 'error', error: err.error })));
    return;
  }
  const rest = await usageDelay(res, out, sim, req);
  if (rest === null) {
    if (charge) charge.state = 'client_gone';
    return;
  }
  out = rest;
  if (charge) {
    charge.completion = plan.usage.output;
    charge.state = 'complete';
  }
  if (hasBlock) out += event('content_block_stop', '{"type":"content_block_stop","index":0}');
  const endUsage = sim.omitUsage ? '' : `,"usage":${usageJson(plan.usage, plan.usage.output)}`;
  out += event(
    'message_delta',
    `{"type":"message_delta","delta":{"stop_reason":"${plan.stopReason}","stop_sequence":${JSON.stringify(plan.stopSequence)}}${endUsage}}`,
  );
  res.end(out + event('message_stop', '{"type":"message_stop"}'));
}
