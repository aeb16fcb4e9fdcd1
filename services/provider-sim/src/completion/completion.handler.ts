import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { upstreamError } from '../http/openai-error';
import { defaultCompletionLength, generatePieces, PIECES_JSON, piecesText, promptSeed } from './generator';
import { type Charge, openCharge } from './ledger';
import { countPromptTokens, TOKENS_PER_IMAGE } from './prompt-tokens';
import type { CompletionRequest, SimOptions } from './request';
import { writeToolCall } from './tool-call';

export interface SimDefaults {
  ttftMs: number;
  interTokenMs: number;
}

/** What one request will produce: every number the response reports. */
export interface CompletionPlan {
  pieces: Uint16Array;
  finishReason: 'stop' | 'length';
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  cacheWriteTokens: number | undefined;
  /** Cache writes for one hour (`sim.cache_write_1h_tokens`), on top of `cacheWriteTokens`. */
  cacheWrite1hTokens: number;
  reasoningTokens: number;
}

/** Image parts of an OpenAI chat request. */
function imageCount(messages: readonly { content?: unknown }[]): number {
  let n = 0;
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue;
    for (const part of m.content) if ((part as { type?: unknown } | null)?.type === 'image_url') n++;
  }
  return n;
}

/** Prompt tokens with `sim.image_tokens` per image instead of the count's own figure. */
export const withImageTokens = (count: number, images: number, sim: SimOptions): number =>
  sim.imageTokens === undefined ? count : count + images * (sim.imageTokens - TOKENS_PER_IMAGE);

function planCompletion(req: CompletionRequest): CompletionPlan {
  const prompt = withImageTokens(countPromptTokens(req.messages), imageCount(req.messages), req.sim);
  return planTokens(promptSeed(req.messages), prompt, req.maxTokens, req.sim);
}

/** The plan of a completion whose prompt hashes to `seed` and counts `promptTokens` (both wire formats). */
export function planTokens(
  seed: number,
  promptTokens: number,
  maxTokens: number | undefined,
  sim: SimOptions,
): CompletionPlan {
  let target = sim.completionTokens ?? defaultCompletionLength(seed);
  let reasoning = sim.reasoningTokens;
  let finishReason: 'stop' | 'length' = 'stop';
  if (maxTokens !== undefined) {
    // Like max_completion_tokens on reasoning models: the limit covers reasoning + visible tokens.
    if (reasoning > maxTokens) reasoning = maxTokens;
    const budget = maxTokens - reasoning;
    if (target > budget) {
      target = budget;
      finishReason = 'length';
    }
  }
  const cachedTokens = Math.min(sim.cachedTokens, promptTokens);
  const cacheWriteTokens =
    sim.cacheWriteTokens === undefined
      ? undefined
      : Math.min(sim.cacheWriteTokens, promptTokens - cachedTokens);
  const cacheWrite1hTokens = Math.min(
    sim.cacheWrite1hTokens ?? 0,
    promptTokens - cachedTokens - (cacheWriteTokens ?? 0),
  );
  return {
    pieces: generatePieces(seed, target),
    finishReason,
    promptTokens,
    completionTokens: target + reasoning,
    cachedTokens,
    cacheWriteTokens,
    cacheWrite1hTokens,
    reasoningTokens: reasoning,
  };
}

export function usageJson(plan: CompletionPlan): string {
  const cacheWrite =
    plan.cacheWriteTokens === undefined && plan.cacheWrite1hTokens === 0
      ? ''
      : `,"cache_write_tokens":${(plan.cacheWriteTokens ?? 0) + plan.cacheWrite1hTokens}`;
  return (
    `{"prompt_tokens":${plan.promptTokens},"completion_tokens":${plan.completionTokens},` +
    `"total_tokens":${plan.promptTokens + plan.completionTokens},` +
    `"prompt_tokens_details":{"cached_tokens":${plan.cachedTokens},"audio_tokens":0${cacheWrite}},` +
    `"completion_tokens_details":{"reasoning_tokens":${plan.reasoningTokens},"audio_tokens":0,` +
    `"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`
  );
}

const FINGERPRINT = 'fp_tollgate_sim';
const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
let idCounter = 0;

/** `chatcmpl-` + 24 characters, unique per process without a CSPRNG call per request. */
export function completionId(): string {
  let s = 'chatcmpl-';
  for (let i = 0; i < 16; i++) s += ID_ALPHABET[Math.floor(Math.random() * 62)];
  idCounter = (idCounter + 1) % 62 ** 8;
  let c = idCounter;
  for (let i = 0; i < 8; i++) {
    s += ID_ALPHABET[c % 62];
    c = Math.floor(c / 62);
  }
  return s;
}

/** Headers of an error answer: JSON, plus `retry-after` when `sim.retry_after` asks for it. */
export function errorHeaders(body: string, retryAfter: number | undefined): Record<string, string | number> {
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  };
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  return headers;
}

function writeError(res: ServerResponse, status: number, message?: string, retryAfter?: number): void {
  const body = JSON.stringify(upstreamError(status, message).toJSON());
  res.writeHead(status, errorHeaders(body, retryAfter));
  res.end(body);
}

/** Waits `ms` unless the client went away; false means stop. */
export async function wait(ms: number, signal: AbortSignal): Promise<boolean> {
  if (ms <= 0) return !signal.aborted;
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

export function clientGone(req: IncomingMessage, res: ServerResponse): AbortSignal {
  const ac = new AbortController();
  const abort = () => {
    if (!res.writableFinished) ac.abort();
  };
  res.once('close', abort);
  req.once('aborted', abort);
  return ac.signal;
}

export async function completeJson(
  req: IncomingMessage,
  res: ServerResponse,
  body: CompletionRequest,
  defaults: SimDefaults,
): Promise<void> {
  const { sim } = body;
  const plan = planCompletion(body);
  const ttft = sim.ttftMs ?? defaults.ttftMs;
  const inter = sim.interTokenMs ?? defaults.interTokenMs;
  const delay = ttft + inter * Math.max(plan.pieces.length - 1, 0) + (sim.usageDelayMs ?? 0);
  // Accepted: generated whole, whether or not anyone waits for it (ledger.ts).
  const charge =
    sim.errorStatus === undefined && sim.errorAfterChunks === undefined
      ? openCharge(plan, {
          model: body.model,
          format: 'openai',
          stream: false,
          sim,
          images: imageCount(body.messages),
        })
      : null;
  if (delay > 0 && !(await wait(delay, clientGone(req, res)))) {
    if (charge) charge.state = 'client_gone';
    return;
  }
  if (sim.errorStatus !== undefined)
    return writeError(res, sim.errorStatus, sim.errorMessage, sim.retryAfter);
  if (sim.errorAfterChunks !== undefined) return writeError(res, 500, sim.errorMessage);
  if (charge) charge.state = sim.cutAfterChunks !== undefined ? 'cut' : 'complete';
  if (sim.cutAfterChunks !== undefined) {
    res.destroy();
    return;
  }
  if (body.tool) return writeToolCall(res, body, body.tool, plan);
  const usage = sim.omitUsage ? '' : `,"usage":${usageJson(plan)}`;
  const json =
    `{"id":"${completionId()}","object":"chat.completion","created":${Math.floor(Date.now() / 1000)},` +
    `"model":${JSON.stringify(body.model)},"choices":[{"index":0,"message":{"role":"assistant",` +
    `"content":${JSON.stringify(sim.piece === undefined ? piecesText(plan.pieces) : sim.piece.repeat(plan.pieces.length))},"refusal":null,"annotations":[]},"logprobs":null,` +
    `"finish_reason":"${plan.finishReason}"}]${usage},"service_tier":"default","system_fingerprint":"${FINGERPRINT}"}`;
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
  res.end(json);
}

const MID_STREAM_ERROR = (message?: string) =>
  `data: ${JSON.stringify(upstreamError(500, message).toJSON())}\n\n`;

/** Stream pacing of a request: waits the time to first token; null when the client went away. */
export async function firstToken(
  req: IncomingMessage,
  res: ServerResponse,
  sim: SimOptions,
  defaults: SimDefaults,
): Promise<{ inter: number; signal: AbortSignal | undefined } | null> {
  const ttft = sim.ttftMs ?? defaults.ttftMs;
  const inter = sim.interTokenMs ?? defaults.interTokenMs;
  const signal = ttft > 0 || inter > 0 ? clientGone(req, res) : undefined;
  if (ttft > 0 && !(await wait(ttft, signal!))) return null;
  return { inter, signal };
}

/**
 * The content part of a simulated stream, shared by both wire formats: appends `eventAt(0..count-1)`
 * to `out`, flushing and waiting `inter` ms between events, and stops where `sim.error_after_chunks` /
 * `sim.cut_after_chunks` say (the smaller wins, the error on a tie). A cut is carried out here (what
 * was produced is flushed, then the socket destroyed); an error is left to the caller, whose wire
 * format shapes it. Returns the unsent text and how the stream goes on, or null when it is over
 * (client gone or cut).
 */
export async function streamContent(
  res: ServerResponse,
  out: string,
  count: number,
  eventAt: (i: number) => string,
  sim: SimOptions,
  pacing: { inter: number; signal: AbortSignal | undefined },
  charge: Charge | null = null,
): Promise<{ out: string; end: 'complete' | 'error' } | null> {
  const stopAt = Math.min(sim.errorAfterChunks ?? Infinity, sim.cutAfterChunks ?? Infinity, count);
  for (let i = 0; i < stopAt; i++) {
    if (i > 0 && pacing.inter > 0) {
      res.write(out);
      out = '';
      if (!(await wait(pacing.inter, pacing.signal!))) {
        if (charge) charge.state = 'client_gone';
        return null;
      }
    }
    out += eventAt(i);
    // Each content event is one generated token (the tokens it stands for are written below).
    if (charge) charge.completion++;
  }
  const errorFirst =
    sim.errorAfterChunks !== undefined &&
    (sim.cutAfterChunks === undefined || sim.errorAfterChunks <= sim.cutAfterChunks);
  if (errorFirst) {
    if (charge) charge.state = 'error';
    return { out, end: 'error' };
  }
  if (sim.cutAfterChunks !== undefined) {
    // Flush what was produced, then kill the socket: no finish, no usage, no end marker.
    if (charge) charge.state = 'cut';
    res.write(out, () => res.destroy());
    return null;
  }
  return { out, end: 'complete' };
}

/**
 * `sim.usage_delay_ms`: flushes `out` (the content so far) and waits before the end of the answer
 * (finish and usage); returns what is left to send ('' after a delay, `out` as it is without one:
 * the end then leaves in the same write), or null when the client went away meanwhile.
 */
export async function usageDelay(
  res: ServerResponse,
  out: string,
  sim: SimOptions,
  req: IncomingMessage,
): Promise<string | null> {
  const ms = sim.usageDelayMs ?? 0;
  if (ms <= 0) return out;
  res.write(out);
  return (await wait(ms, clientGone(req, res))) ? '' : null;
}

export async function completeStream(
  req: IncomingMessage,
  res: ServerResponse,
  body: CompletionRequest,
  defaults: SimDefaults,
): Promise<void> {
  const { sim } = body;
  const plan = planCompletion(body);
  // Accepted: the prompt and the reasoning are charged at once, the content as it streams (ledger.ts).
  const charge =
    sim.errorStatus === undefined
      ? openCharge(plan, {
          model: body.model,
          format: 'openai',
          stream: true,
          sim,
          images: imageCount(body.messages),
        })
      : null;
  const pacing = await firstToken(req, res, sim, defaults);
  if (!pacing) {
    if (charge) charge.state = 'client_gone';
    return;
  }
  if (sim.errorStatus !== undefined)
    return writeError(res, sim.errorStatus, sim.errorMessage, sim.retryAfter);
  if (body.tool) return writeToolCall(res, body, body.tool, plan);

  const usageNull = body.includeUsage ? ',"usage":null' : '';
  const meta =
    `"id":"${completionId()}","object":"chat.completion.chunk","created":${Math.floor(Date.now() / 1000)},` +
    `"model":${JSON.stringify(body.model)},"service_tier":"default","system_fingerprint":"${FINGERPRINT}"`;
  const head = `data: {${meta},"choices":[{"index":0,"delta":`;
  const tail = `,"logprobs":null,"finish_reason":null}]${usageNull}}\n\n`;

  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const pieces = plan.pieces;
  const pieceJson = sim.piece === undefined ? null : JSON.stringify(sim.piece);
  const sent = await streamContent(
    res,
    `${head}{"role":"assistant"}${tail}`,
    pieces.length,
    (i) => `${head}{"content":${pieceJson ?? PIECES_JSON[pieces[i]!]}}${tail}`,
    sim,
    pacing,
    charge,
  );
  if (!sent) return;
  let out = sent.out;
  if (sent.end === 'error') {
    res.end(out + MID_STREAM_ERROR(sim.errorMessage));
    return;
  }
  const rest = await usageDelay(res, out, sim, req);
  if (rest === null) {
    if (charge) charge.state = 'client_gone';
    return;
  }
  if (charge) {
    charge.completion = plan.completionTokens;
    charge.state = 'complete';
  }
  out = rest;
  out += `${head}{},"logprobs":null,"finish_reason":"${plan.finishReason}"}]${usageNull}}\n\n`;
  if (body.includeUsage && !sim.omitUsage) {
    out += `data: {${meta},"choices":[],"usage":${usageJson(plan)}}\n\n`;
  }
  res.end(`${out}data: [DONE]\n\n`);
}
