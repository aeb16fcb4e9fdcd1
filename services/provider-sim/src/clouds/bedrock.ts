import type { IncomingMessage, ServerResponse } from 'node:http';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { planMessage } from '../anthropic/messages.handler';
import type { AnthropicBlock, MessagesRequest } from '../anthropic/messages.request';
import { clientGone, firstToken, type SimDefaults, wait } from '../completion/completion.handler';
import { isObject, parseSim } from '../completion/request';
import { awsError } from './cloud-error';

/**
 * The simulator's Bedrock Converse API (`POST /model/<model id>/converse` and `/converse-stream`),
 * checking what Bedrock checks beyond the signature (sigv4.ts): known top-level fields only, a
 * conversation that starts with a user turn and alternates roles, content blocks of the documented
 * kinds, `toolResult`s answering a `toolUse`. The stream is AWS event-stream framing encoded by the
 * AWS SDK's own codec: messageStart, contentBlockStart (tool use), contentBlockDelta, contentBlockStop,
 * messageStop, metadata (usage); `sim.error_after_chunks` sends a modelStreamErrorException message.
 */
type Json = Record<string, unknown>;

const FIELDS = new Set([
  'messages',
  'system',
  'inferenceConfig',
  'toolConfig',
  'guardrailConfig',
  'additionalModelRequestFields',
  'additionalModelResponseFieldPaths',
  'promptVariables',
  'requestMetadata',
  'performanceConfig',
  'sim',
]);
const codec = new EventStreamCodec(toUtf8, fromUtf8);

const invalid = (message: string) => awsError(400, message, 'ValidationException');

function blocksOf(content: unknown, at: string): AnthropicBlock[] {
  if (!Array.isArray(content) || content.length === 0) throw invalid(`${at}.content: must not be empty`);
  return content.map((b: unknown, j) => {
    if (!isObject(b)) throw invalid(`${at}.content[${j}]: must be an object`);
    if (typeof b.text === 'string') return { type: 'text', text: b.text };
    if (isObject(b.image)) {
      const src = isObject(b.image.source) ? b.image.source : {};
      if (typeof src.bytes !== 'string' || !['png', 'jpeg', 'gif', 'webp'].includes(String(b.image.format)))
        throw invalid(`${at}.content[${j}].image: needs format png|jpeg|gif|webp and source.bytes`);
      return { type: 'image', source: { type: 'base64' } };
    }
    if (isObject(b.toolUse))
      return {
        type: 'tool_use',
        id: String(b.toolUse.toolUseId),
        name: String(b.toolUse.name),
        input: (b.toolUse.input ?? {}) as Json,
      };
    if (isObject(b.toolResult))
      return {
        type: 'tool_result',
        tool_use_id: String(b.toolResult.toolUseId),
        content: JSON.stringify(b.toolResult.content ?? []),
      };
    throw invalid(`${at}.content[${j}]: unknown content block ${Object.keys(b)[0] ?? ''}`);
  });
}

function toolChoiceOf(config: Json): MessagesRequest['toolChoice'] {
  const c = isObject(config.toolChoice) ? config.toolChoice : {};
  if (isObject(c.any)) return { type: 'any' };
  if (isObject(c.tool)) return { type: 'tool', name: String(c.tool.name) };
  return { type: 'auto' };
}

/** A Converse body as the Anthropic mode's request (ValidationException when malformed). */
function parseConverseRequest(raw: unknown, model: string, stream: boolean): MessagesRequest {
  if (!isObject(raw)) throw invalid('Malformed input request, please reformat your input and try again.');
  for (const k of Object.keys(raw))
    if (!FIELDS.has(k)) throw invalid(`Malformed input request: extraneous key [${k}] is not permitted`);
  if (!Array.isArray(raw.messages) || raw.messages.length === 0) throw invalid('messages: must not be empty');
  const toolUses = new Set<string>();
  const messages = raw.messages.map((m: unknown, i) => {
    if (!isObject(m) || (m.role !== 'user' && m.role !== 'assistant'))
      throw invalid(`messages[${i}].role: must be user or assistant`);
    if (i === 0 && m.role !== 'user')
      throw invalid(
        'A conversation must start with a user message. Try again with a conversation that starts with a user message.',
      );
    if (i > 0 && (raw.messages as Json[])[i - 1]?.role === m.role)
      throw invalid(
        'A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.',
      );
    const content = blocksOf(m.content, `messages[${i}]`);
    for (const b of content) {
      if (b.type === 'tool_use') toolUses.add(b.id as string);
      if (b.type === 'tool_result' && !toolUses.has(b.tool_use_id as string))
        throw invalid(
          `messages[${i}]: the toolResult ${b.tool_use_id} answers no toolUse of an earlier turn`,
        );
    }
    return { role: m.role as 'user' | 'assistant', content };
  });
  const system = Array.isArray(raw.system)
    ? raw.system.map((s: Json) => String(s.text ?? '')).join('')
    : undefined;
  const inference = isObject(raw.inferenceConfig) ? raw.inferenceConfig : {};
  const toolConfig = isObject(raw.toolConfig) ? raw.toolConfig : {};
  const tools = Array.isArray(toolConfig.tools) ? toolConfig.tools : [];
  return {
    model,
    messages,
    system,
    maxTokens: typeof inference.maxTokens === 'number' ? inference.maxTokens : 4096,
    stream,
    stopSequences: Array.isArray(inference.stopSequences) ? inference.stopSequences.map(String) : [],
    tools: tools.map((t: Json) => {
      const spec = isObject(t.toolSpec) ? t.toolSpec : {};
      const schema =
        isObject(spec.inputSchema) && isObject(spec.inputSchema.json) ? spec.inputSchema.json : {};
      return { name: String(spec.name), input_schema: schema };
    }),
    toolChoice: toolChoiceOf(toolConfig),
    sim: parseSim(raw.sim),
  };
}

const STOP = {
  end_turn: 'end_turn',
  stop_sequence: 'stop_sequence',
  tool_use: 'tool_use',
  max_tokens: 'max_tokens',
} as const;

function usageOf(plan: ReturnType<typeof planMessage>): Json {
  const u = plan.usage;
  return {
    inputTokens: u.input,
    outputTokens: u.output,
    totalTokens: u.input + u.cacheRead + u.cacheWrite + u.output,
    cacheReadInputTokens: u.cacheRead,
    cacheWriteInputTokens: u.cacheWrite,
  };
}

const frame = (type: string, body: Json, kind: 'event' | 'exception' = 'event'): Uint8Array =>
  codec.encode({
    headers: {
      ':message-type': { type: 'string', value: kind },
      [kind === 'event' ? ':event-type' : ':exception-type']: { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
    },
    body: fromUtf8(JSON.stringify(body)),
  });

/** POST /model/<id>/converse | /converse-stream (after the signature was verified). */
export async function bedrockConverse(
  req: IncomingMessage,
  res: ServerResponse,
  raw: unknown,
  model: string,
  stream: boolean,
  defaults: SimDefaults,
): Promise<void> {
  const body = parseConverseRequest(raw, model, stream);
  const { sim } = body;
  const plan = planMessage(body);
  const pacing = await firstToken(req, res, sim, defaults);
  if (!pacing) return;
  if (sim.errorStatus !== undefined) throw awsError(sim.errorStatus, sim.errorMessage ?? 'Simulated error.');
  const toolInput = plan.tool ? JSON.parse(plan.tool.input) : undefined;
  if (!stream) {
    const content: Json[] = [];
    if (plan.text.length > 0) content.push({ text: plan.text.join('') });
    if (plan.tool)
      content.push({ toolUse: { toolUseId: plan.tool.id, name: plan.tool.name, input: toolInput } });
    const out: Json = {
      output: { message: { role: 'assistant', content } },
      stopReason: STOP[plan.stopReason],
      metrics: { latencyMs: 1 },
    };
    if (!sim.omitUsage) out.usage = usageOf(plan);
    const text = JSON.stringify(out);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
    return;
  }
  const deltas: Json[] = plan.tool
    ? [{ toolUse: { input: plan.tool.input } }]
    : plan.text.map((t) => ({ text: t }));
  res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
  res.write(frame('messageStart', { role: 'assistant', p: 'abc' }));
  if (plan.tool)
    res.write(
      frame('contentBlockStart', {
        contentBlockIndex: 0,
        start: { toolUse: { toolUseId: plan.tool.id, name: plan.tool.name } },
      }),
    );
  const signal = clientGone(req, res);
  for (let i = 0; i < deltas.length; i++) {
    if (sim.errorAfterChunks !== undefined && i >= sim.errorAfterChunks) {
      res.end(
        frame(
          'modelStreamErrorException',
          { message: sim.errorMessage ?? 'Simulated stream error.' },
          'exception',
        ),
      );
      return;
    }
    if (sim.cutAfterChunks !== undefined && i >= sim.cutAfterChunks) {
      res.destroy();
      return;
    }
    if (i > 0 && !(await wait(pacing.inter, signal))) return;
    res.write(frame('contentBlockDelta', { contentBlockIndex: 0, delta: deltas[i] }));
  }
  res.write(frame('contentBlockStop', { contentBlockIndex: 0 }));
  res.write(frame('messageStop', { stopReason: STOP[plan.stopReason] }));
  res.end(sim.omitUsage ? undefined : frame('metadata', { usage: usageOf(plan), metrics: { latencyMs: 1 } }));
}
