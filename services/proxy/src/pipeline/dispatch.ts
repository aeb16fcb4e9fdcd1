import { AppError } from '@tollgate/errors';
import { isNativeFor } from '../doors/door';
import type { ProxyResponse } from '../http/types';
import { attemptRequest, formatFor } from '../providers';
import { REQUEST_TOO_LARGE } from '../providers/provider-error';
import type { ClassifiedHttpError } from '../providers/wire-format';
import type { Candidate } from '../routing/candidates';
import type { KeyRing, ProviderHealth } from '../routing/health';
import { withholdMediaErrorText } from '../routing/media-policy';
import { StreamedBody, type UpstreamAnswer } from '../upstream/streamed';
import { acquireUpstream, isAbortError, ownedBytes, readSome, type Upstreams } from '../upstream/upstream';
import type { Completion } from './completion';
import { type Plan, upstreamBody } from './plan';

/**
 * A provider's answer; `refusal` is its error answer classified by its wire format (non-2xx). A
 * streamed request's body is a `StreamedBody` (upstream/streamed.ts: the relay takes its reads from
 * undici's callbacks), a JSON request's undici's own body.
 */
export type UpstreamResponse = UpstreamAnswer & { refusal?: ClassifiedHttpError };

/** Failover bounds, provider health and key rotation (services/proxy/src/routing). */
export interface DispatchDeps {
  upstreams: Upstreams;
  routing: { maxAttempts: number; deadlineMs: number; health: ProviderHealth; keys: KeyRing };
}

/**
 * The failover policy, in one place: what dispatch does with a provider's error answer before any
 * byte reached the client, from what its wire format says happened (providers/wire-format.ts
 * ProviderFailure).
 *
 * - `failover`: another candidate may serve it — anything but the caller's own mistake (another
 *   provider would refuse that too: it is answered as it is);
 * - `restKey`: the key was rejected, is unpaid or rate limited: skip it for a while (routing/health.ts
 *   KeyRing);
 * - `providerFault`: a failover that counts against the provider's circuit (routing/health.ts).
 *
 * A "request too large" 429 (providers/provider-error.ts REQUEST_TOO_LARGE, about this request's
 * size) fails over but neither rests the key nor counts against the provider: a tenant could
 * otherwise trip them for everyone, for free.
 */
export function failoverDecision(refused: ClassifiedHttpError): {
  failover: boolean;
  restKey: boolean;
  providerFault: boolean;
} {
  const ownSize = refused.summary.metadata.reason === REQUEST_TOO_LARGE;
  const { failure } = refused;
  const failover = failure !== 'caller';
  return {
    failover,
    restKey: !ownSize && (failure === 'credentials' || failure === 'rate_limited'),
    providerFault: failover && !ownSize,
  };
}

/** `Retry-After` (seconds or an HTTP date) in ms, capped; undefined when absent or unreadable. */
function retryAfterMs(value: string | string[] | undefined, capMs = 60_000): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  const seconds = Number(v);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(capMs, seconds * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.min(capMs, Math.max(0, at - Date.now()));
}

/** Jittered exponential backoff before retrying the same provider: 100 ms doubling, ±20 %, capped. */
function backoffMs(attempt: number, capMs = 2_000): number {
  const base = Math.min(capMs, 100 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** Resolves after `ms`, or at once when the request is aborted. */
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });

/** A provider's error response: the summary for the client; its own text goes to the log only. */
export function refusal(c: Completion, status: number, refused: ClassifiedHttpError): AppError {
  c.log.warn(
    { provider: c.provider.name, upstreamStatus: status, detail: refused.detail },
    'provider refused the request',
  );
  return refused.summary;
}

/**
 * Stage 4, dispatch: the attempt loop and its failover policy, in one place. Tries the candidates of
 * the plan in order until one answers with something the policy does not fail over from
 * (`failoverDecision`, over what its wire format says happened), before any byte reached the client; bounded by `maxAttempts` and one deadline; the same provider again backs off (Retry-After
 * honoured); a rejected provider key rests (KeyRing); each attempt feeds the circuit breaker and the
 * completion's attempt list. Returns that answer (2xx, or the caller's own 4xx with its `refusal`);
 * throws the last failure when none is left, and rethrows a cancel/abort as it is.
 */
export async function dispatch(
  deps: DispatchDeps,
  c: Completion,
  p: Plan,
  res: ProxyResponse,
): Promise<UpstreamResponse> {
  const { maxAttempts, deadlineMs, health, keys } = deps.routing;
  const deadline = c.startedAt + deadlineMs;
  const rejectedKeys = new Set<string>();
  let last: AppError | null = null;
  let lastRetryAfter: number | undefined;
  let previous: string | null = null;
  for (let i = 0; i < p.candidates.length && i < maxAttempts; i++) {
    const cand = p.candidates[i] as Candidate;
    if (i > 0) {
      if (cand.provider.name === previous) {
        // The same provider again (another model or key): back off, honouring Retry-After.
        const wait = Math.min(lastRetryAfter ?? backoffMs(i), deadline - Date.now());
        if (wait > 0) await sleep(wait, c.abort.signal);
      }
      if (Date.now() >= deadline || c.cancelled) break;
    }
    c.aim(cand, upstreamBody(p, cand));
    previous = cand.provider.name;
    const apiKey = keys.pick(cand.provider.name, cand.provider.apiKeys, rejectedKeys);
    const started = Date.now();
    health.attempting(cand.provider.name);
    const record = (status: number | null, outcome: string) => c.recordAttempt(status, outcome, started);
    let up: UpstreamResponse;
    try {
      up = await send(deps.upstreams, c, apiKey, p, extraHeaders(p, cand), nativePath(p, cand));
    } catch (err) {
      c.releaseUpstream();
      if (c.cancelled || isAbortError(err) || c.timedOut) throw err;
      const e = c.failureOf(err);
      // At capacity in this process is not the provider's fault: no health penalty.
      if (e.type !== 'service_unavailable') health.failure(cand.provider.name);
      else health.inconclusive(cand.provider.name);
      record(
        null,
        e.type === 'timeout' ? 'timeout' : e.type === 'service_unavailable' ? 'capacity' : 'unreachable',
      );
      last = e;
      lastRetryAfter = undefined;
      continue;
    }
    // An error answer is read (64 KiB at most) and classified by its wire format (what happened).
    const classified =
      up.statusCode >= 200 && up.statusCode < 300
        ? null
        : formatFor(p.door, cand.provider.format).classifyHttpError(
            up.statusCode,
            await readSome(up.body),
            cand.provider.name,
          );
    // A refusal of a request naming media by URL keeps the provider's text from the caller.
    const refused =
      classified && withholdMediaErrorText(classified, p.request, up.statusCode, cand.provider.name);
    const decision = refused && failoverDecision(refused);
    if (refused === null || !decision?.failover) {
      health.success(cand.provider.name);
      record(up.statusCode, up.statusCode < 300 ? 'ok' : `http_${up.statusCode}`);
      return refused === null ? up : Object.assign(up, { refusal: refused });
    }
    c.releaseUpstream();
    lastRetryAfter = retryAfterMs(up.headers['retry-after']);
    if (decision.restKey && apiKey) {
      keys.reject(apiKey, lastRetryAfter);
      rejectedKeys.add(apiKey);
    }
    if (decision.providerFault) health.failure(cand.provider.name);
    else health.inconclusive(cand.provider.name);
    record(up.statusCode, `http_${up.statusCode}`);
    last = refusal(c, up.statusCode, refused);
  }
  // A final 429 passes the provider's Retry-After on to the client.
  if (last?.status === 429 && lastRetryAfter !== undefined && !res.headersSent) {
    res.setHeader('Retry-After', String(Math.ceil(lastRetryAfter / 1000)));
  }
  throw (
    last ??
    new AppError(
      'provider_error',
      `No provider of ${c.model.id} could be tried within the routing deadline`,
      {
        provider_name: c.provider.name,
      },
    )
  );
}

/** The caller's headers a native body depends on (`anthropic-beta`), for a candidate of the door's format. */
function extraHeaders(p: Plan, cand: Candidate): Record<string, string> | undefined {
  const extra = p.request.nativeHeaders;
  return extra && isNativeFor(p.door, cand.provider) ? extra : undefined;
}

/** The native API's own path for a candidate that speaks it (`<base>/responses`), else null (its format's). */
function nativePath(p: Plan, cand: Candidate): string | null {
  const { door } = p;
  return door.nativePath && isNativeFor(door, cand.provider) ? door.nativePath(cand.provider.baseUrl) : null;
}

/** One attempt: request start → provider response headers. */
async function send(
  upstreams: Upstreams,
  c: Completion,
  apiKey: string | undefined,
  p: Plan,
  extra: Record<string, string> | undefined,
  ownPath: string | null,
): Promise<UpstreamResponse> {
  const target = upstreams.target(c.provider, apiKey);
  c.holdUpstream(acquireUpstream(target, c.provider.name));
  const body = JSON.stringify(c.upstreamBody);
  // The wire format's path and headers for this model and body (Gemini, Azure, Bedrock's signature).
  const { path, headers } = await attemptRequest(formatFor(p.door, c.provider.format), {
    provider: c.provider,
    upstreamModel: c.upstreamModel,
    stream: c.request.stream,
    apiKey,
    body,
    base: target,
  });
  const options = {
    method: 'POST' as const,
    path: ownPath ?? path,
    headers: extra ? { ...headers, ...extra } : headers,
    body: ownedBytes(body),
  };
  // Both on undici's dispatch callbacks (upstream/streamed.ts): a JSON answer is collected by
  // `text()` with no `Readable` per answer, and needs no AbortSignal (`forRequest`: one is made only
  // when something waits on it).
  return StreamedBody.request(target.pool, options, c.request.stream ? c.abort.signal : c.abort.forRequest);
}
