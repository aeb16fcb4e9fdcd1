import type { IncomingMessage, ServerResponse } from 'node:http';
import { planMessage } from '../anthropic/messages.handler';
import type { AnthropicBlock, MessagesRequest } from '../anthropic/messages.request';
import { clientGone, firstToken, type SimDefaults, wait } from '../completion/completion.handler';
import { isObject, parseSim } from '../completion/request';
import { googleError } from './cloud-error';

/**
 * The simulator's Gemini API (`POST /v1beta/models/<model>:generateContent` and
 * `:streamGenerateContent?alt=sse`), checking what Google checks: the `x-goog-api-key` header (the
 * simulator's key when it has one; a wrong key is Google's 400 API_KEY_INVALID), unknown fields ("Invalid
 * JSON payload received. Unknown name …"), roles `user`/`model`, non-empty parts. The request is read into
 * the Anthropic mode's request so the same plan (text, tool call, usage, `sim` faults) answers it;
 * `sim.safety_block: true` answers with a prompt blocked for safety.
 */
type Json = Record<string, unknown>;

const FIELDS = new Set([
  'contents',
  'systemInstruction',
  'tools',
  'toolConfig',
  'generationConfig',
  'safetySettings',
  'cachedContent',
  'labels',
  'sim',
]);
const CONFIG_FIELDS = new Set([
  'maxOutputTokens',
  'temperature',
  'topP',
  'topK',
  'stopSequences',
  'candidateCount',
  'seed',
  'presencePenalty',
  'frequencyPenalty',
  'responseMimeType',
  'responseSchema',
  'responseJsonSchema',
  'thinkingConfig',
]);

const unknownName = (name: string, at: string) =>
  googleError(400, `Invalid JSON payload received. Unknown name "${name}" at '${at}': Cannot find field.`);

export function checkGeminiKey(req: IncomingMessage, apiKey: string | undefined): void {
  const key = req.headers['x-goog-api-key'];
  if (typeof key !== 'string' || key.length === 0)
    throw googleError(
      403,
      "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
    );
  if (apiKey !== undefined && key !== apiKey)
    throw googleError(400, 'API key not valid. Please pass a valid API key.', 'API_KEY_INVALID');
}

function blocksOf(parts: unknown, at: string): AnthropicBlock[] {
  if (!Array.isArray(parts) || parts.length === 0)
    throw googleError(400, `* GenerateContentRequest.${at}.parts: contents.parts must not be empty.`);
  return parts.map((p: unknown, j) => {
    if (!isObject(p)) throw googleError(400, `${at}.parts[${j}]: must be an object`);
    if (typeof p.text === 'string') return { type: 'text', text: p.text };
    if (isObject(p.inlineData)) return { type: 'image', source: { type: 'base64' } };
    if (isObject(p.fileData)) return { type: 'image', source: { type: 'url' } };
    if (isObject(p.functionCall))
      return {
        type: 'tool_use',
        id: String(p.functionCall.name),
        name: String(p.functionCall.name),
        input: (p.functionCall.args ?? {}) as Json,
      };
    if (isObject(p.functionResponse))
      return {
        type: 'tool_result',
        tool_use_id: String(p.functionResponse.name),
        content: JSON.stringify(p.functionResponse.response ?? {}),
      };
    throw unknownName(Object.keys(p)[0] ?? '', `${at}.parts[${j}]`);
  });
}

function toolChoiceOf(body: Json): MessagesRequest['toolChoice'] {
  const c =
    isObject(body.toolConfig) && isObject(body.toolConfig.functionCallingConfig)
      ? body.toolConfig.functionCallingConfig
      : {};
  const names = Array.isArray(c.allowedFunctionNames) ? c.allowedFunctionNames : [];
  if (c.mode === 'NONE') return { type: 'none' };
  if (c.mode === 'ANY')
    return names.length === 1 ? { type: 'tool', name: String(names[0]) } : { type: 'any' };
  return { type: 'auto' };
}

/** A generateContent body as the Anthropic mode's request (400 in Google's words when malformed). */
function parseGeminiRequest(raw: unknown, model: string, stream: boolean): MessagesRequest {
  if (!isObject(raw)) throw googleError(400, 'Invalid JSON payload received.');
  for (const k of Object.keys(raw)) if (!FIELDS.has(k)) throw unknownName(k, '');
  const config = isObject(raw.generationConfig) ? raw.generationConfig : {};
  for (const k of Object.keys(config)) if (!CONFIG_FIELDS.has(k)) throw unknownName(k, 'generation_config');
  if (!Array.isArray(raw.contents) || raw.contents.length === 0)
    throw googleError(400, '* GenerateContentRequest.contents: contents is not specified');
  const messages = raw.contents.map((c: unknown, i) => {
    if (!isObject(c) || (c.role !== 'user' && c.role !== 'model'))
      throw googleError(400, `Please use a valid role: user, model. (contents[${i}])`);
    return {
      role: c.role === 'model' ? ('assistant' as const) : ('user' as const),
      content: blocksOf(c.parts, `contents[${i}]`),
    };
  });
  const si = isObject(raw.systemInstruction) ? raw.systemInstruction : undefined;
  const system = si
    ? blocksOf(si.parts, 'system_instruction')
        .map((b) => b.text ?? '')
        .join('')
    : undefined;
  const decls = Array.isArray(raw.tools)
    ? raw.tools.flatMap((t: Json) => (Array.isArray(t.functionDeclarations) ? t.functionDeclarations : []))
    : [];
  const max = config.maxOutputTokens;
  return {
    model,
    messages,
    system,
    maxTokens: typeof max === 'number' ? max : 8192,
    stream,
    stopSequences: Array.isArray(config.stopSequences) ? config.stopSequences.map(String) : [],
    tools: decls.map((d: Json) => ({ name: String(d.name), input_schema: (d.parameters ?? {}) as Json })),
    toolChoice: toolChoiceOf(raw),
    sim: parseSim(raw.sim),
  };
}

const FINISH = {
  end_turn: 'STOP',
  stop_sequence: 'STOP',
  tool_use: 'STOP',
  max_tokens: 'MAX_TOKENS',
} as const;

function usageMetadata(req: MessagesRequest, plan: ReturnType<typeof planMessage>): Json {
  const u = plan.usage;
  const thoughts = Math.min(req.sim.reasoningTokens, u.output);
  const prompt = u.input + u.cacheRead + u.cacheWrite;
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: u.output - thoughts,
    totalTokenCount: prompt + u.output,
    ...(u.cacheRead > 0 ? { cachedContentTokenCount: u.cacheRead } : {}),
    ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
  };
}

function responseOf(
  req: MessagesRequest,
  plan: ReturnType<typeof planMessage>,
  parts: Json[],
  finish: boolean,
  id: string,
): Json {
  const candidate: Json = { content: { role: 'model', parts }, index: 0 };
  if (finish) candidate.finishReason = FINISH[plan.stopReason];
  const out: Json = { candidates: [candidate], modelVersion: req.model, responseId: id };
  if (!req.sim.omitUsage) out.usageMetadata = usageMetadata(req, plan);
  return out;
}

/** POST …/models/<model>:generateContent | :streamGenerateContent. */
export async function geminiGenerate(
  req: IncomingMessage,
  res: ServerResponse,
  raw: unknown,
  model: string,
  stream: boolean,
  defaults: SimDefaults,
): Promise<void> {
  const body = parseGeminiRequest(raw, model, stream);
  const { sim } = body;
  const plan = planMessage(body);
  const id = `sim${Date.now().toString(36)}`;
  const pacing = await firstToken(req, res, sim, defaults);
  if (!pacing) return;
  if (sim.errorStatus !== undefined)
    throw googleError(sim.errorStatus, sim.errorMessage ?? 'Simulated error.');
  if (isObject(raw) && isObject(raw.sim) && raw.sim.safety_block === true) {
    const blocked = {
      promptFeedback: { blockReason: 'SAFETY' },
      usageMetadata: { promptTokenCount: plan.usage.input, totalTokenCount: plan.usage.input },
      modelVersion: model,
      responseId: id,
    };
    return send(res, stream, [blocked]);
  }
  const parts: Json[] = plan.tool
    ? [{ functionCall: { name: plan.tool.name, args: JSON.parse(plan.tool.input) } }]
    : plan.text.map((t) => ({ text: t }));
  if (!stream) {
    const text = plan.text.join('');
    const whole = plan.tool ? parts : text.length > 0 ? [{ text }] : [];
    return send(res, false, [responseOf(body, plan, whole, true, id)]);
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const signal = clientGone(req, res);
  const stopAt = Math.min(sim.errorAfterChunks ?? Infinity, sim.cutAfterChunks ?? Infinity);
  for (let i = 0; i < Math.max(parts.length, 1); i++) {
    if (i >= stopAt) {
      if (sim.errorAfterChunks !== undefined && i >= sim.errorAfterChunks) {
        res.end(
          `data: ${JSON.stringify(googleError(503, sim.errorMessage ?? 'The model is overloaded. Please try again later.').body)}\n\n`,
        );
      } else res.destroy();
      return;
    }
    if (i > 0 && !(await wait(pacing.inter, signal))) return;
    const last = i >= parts.length - 1;
    res.write(`data: ${JSON.stringify(responseOf(body, plan, parts.slice(i, i + 1), last, id))}\r\n\r\n`);
  }
  res.end();
}

function send(res: ServerResponse, stream: boolean, events: Json[]): void {
  if (stream) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(events.map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`).join(''));
    return;
  }
  const text = JSON.stringify(events[0]);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
