import { isNativeFor } from '../doors/door';
import type { ProxyResponse } from '../http/types';
import { formatFor } from '../providers';
import type { StreamedBody } from '../upstream/streamed';
import { isAbortError } from '../upstream/upstream';
import type { Completion } from './completion';
import { type DispatchDeps, dispatch, refusal, type UpstreamResponse } from './dispatch';
import { invalidResponse } from './errors';
import type { Outcome } from './outcome';
import type { Plan } from './plan';

type Json = Record<string, unknown>;

/** What the relay stage needs besides dispatch's (a part of PipelineDeps, pipeline.ts). */
export interface RelayDeps extends DispatchDeps {
  keepAliveIntervalMs: number;
  /** A streaming client that does not read for this long is cut (billed for what was produced). */
  streamWriteTimeoutMs: number;
}

const CANCELLED: Outcome = Object.freeze({ kind: 'cancelled' });
/** Why the relay stops reading a provider that sent an error event (never reported as a failure). */
const TERMINATED = new Error('provider error event: reading stopped');

/** The serving candidate speaks the door's own format: its answer passes through the door as it came. */
const nativeFor = (c: Completion, p: Plan): boolean => isNativeFor(p.door, c.provider);

/**
 * Stage 5, relay: dispatch (stage 4), then the provider's answer through its wire format to the door,
 * JSON or stream; returns how the completion ended (an `Outcome`, pipeline/completion.ts). Nothing
 * here ends the completion: `finish` does, once.
 */
export function relay(deps: RelayDeps, c: Completion, p: Plan, res: ProxyResponse): Promise<Outcome> {
  return c.request.stream ? relayStream(deps, c, p, res) : relayJson(deps, c, p, res);
}

/** The JSON answer: read in the provider's wire format (unless native), rendered and priced by the door. */
async function relayJson(deps: RelayDeps, c: Completion, p: Plan, res: ProxyResponse): Promise<Outcome> {
  let up: UpstreamResponse;
  try {
    up = await dispatch(deps, c, p, res);
  } catch (err) {
    if (c.isCancellation(err)) return CANCELLED;
    return { kind: 'refused', error: c.failureOf(err) };
  }
  c.markFirstByte();
  if (up.refusal) return { kind: 'refused', error: refusal(c, up.statusCode, up.refusal) };
  let text: string;
  try {
    text = await up.body.text();
  } catch (err) {
    if (c.isCancellation(err)) return CANCELLED;
    // The provider accepted the request and broke off while sending the answer: it did work.
    return { kind: 'failed', error: c.failureOf(err) };
  } finally {
    c.markUpstreamEnd();
  }
  const native = nativeFor(c, p);
  let json: Json;
  try {
    const parsed = JSON.parse(text) as Json;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new Error('not an object');
    // The wire format's answer → a chat.completion (OpenAI-shaped usage), unless the door speaks it.
    const read = native
      ? parsed
      : formatFor(p.door, c.provider.format).readResponse(parsed, {
          model: c.model.id,
          created: Math.floor(c.startedAt / 1000),
        });
    if (!read) throw new Error('not a completion');
    json = read;
  } catch {
    return { kind: 'failed', error: invalidResponse(c.provider.name) };
  }
  return p.door.readJson(c, json, native) ?? { kind: 'failed', error: invalidResponse(c.provider.name) };
}

/** The stream: dispatch, then the provider's events (bridged to OpenAI chunks unless native) to the door's relay. */
async function relayStream(deps: RelayDeps, c: Completion, p: Plan, res: ProxyResponse): Promise<Outcome> {
  const stream = p.door.stream(c, res, deps.streamWriteTimeoutMs);
  stream.startKeepAlive(deps.keepAliveIntervalMs);
  let up: UpstreamResponse;
  try {
    up = await dispatch(deps, c, p, res);
  } catch (err) {
    stream.stopKeepAlive();
    if (c.isCancellation(err)) return CANCELLED;
    return { kind: 'refused', error: c.failureOf(err) };
  }
  if (up.refusal) {
    stream.stopKeepAlive();
    return { kind: 'refused', error: refusal(c, up.statusCode, up.refusal) };
  }
  const native = nativeFor(c, p);
  stream.commitHead(native);
  // A wire format other than the door's is translated into the OpenAI chunks the door reads.
  const bridge = native
    ? null
    : formatFor(p.door, c.provider.format).streamBridge({
        model: c.model.id,
        created: Math.floor(c.startedAt / 1000),
      });
  try {
    // Each read of the provider as undici's parser delivers it (upstream/streamed.ts); `last`: the
    // provider's end came in the same read, so these bytes leave with the answer's end.
    await (up.body as StreamedBody).relay((bytes, last) => {
      c.markFirstByte();
      if (stream.terminated) return undefined;
      let wait: Promise<void> | undefined;
      if (bridge) {
        const text = bridge.push(bytes);
        c.bodies?.answer(text);
        if (text.length > 0) wait = stream.push(Buffer.from(text), last);
      } else {
        c.bodies?.answer(bytes);
        wait = stream.push(bytes, last);
      }
      // A provider error event: nothing more is read (the upstream request is aborted below).
      if (stream.terminated) (up.body as StreamedBody).destroy(TERMINATED);
      return wait;
    });
    if (bridge && !stream.terminated) {
      const text = bridge.end();
      c.bodies?.answer(text);
      if (text.length > 0) await stream.push(Buffer.from(text));
    }
    if (!stream.terminated) stream.endOfInput();
  } catch (err) {
    // Cut mid-stream, the duration cap or a lapsed lease: the door's error event ends the stream.
    if (err !== TERMINATED && (c.timedOut || !(c.cancelled || isAbortError(err)))) c.fail(c.failureOf(err));
  } finally {
    c.markUpstreamEnd();
    if (stream.terminated) up.body.destroy();
  }
  return stream.finish();
}
