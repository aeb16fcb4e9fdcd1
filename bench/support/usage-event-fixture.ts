import { toDecimal } from '@tollgate/money';
import { usageEventOf } from '../../services/proxy/src/pipeline/usage-event';
import type { Variant } from '../json-request-cpu';

type Source = Parameters<typeof usageEventOf>[0];
type Billed = Parameters<typeof usageEventOf>[1];

/** A served non-streamed chat completion as Completion.finish sees it (one attempt, no team, no bodies). */
function servedCompletion(): { source: Source; billed: Billed } {
  const startedAt = Date.now();
  const source = {
    requestId: 'gen-1764237600-AbCdEfGhIjKlMnOpQrSt',
    key: {
      id: '6f1c7a52-1d3e-4c1b-9a55-2f0d6c1e9b11',
      accountId: '0b6d1f3e-8a2c-4e5f-9d71-3c4b5a6d7e8f',
      scope: 'inference',
      disabled: false,
      revoked: false,
      limit: '100',
      limitReset: 'monthly',
      version: 3,
    },
    model: { id: 'bench/fast' },
    provider: { name: 'bench-upstream' },
    upstreamModel: 'fast-1',
    app: null,
    httpReferer: null,
    api: 'chat',
    request: { stream: false },
    cancelled: false,
    error: null,
    errorDetail: null,
    startedAt,
    firstByteAt: startedAt + 3,
    attempts: [{ provider: 'bench-upstream', model: 'fast-1', status: 200, outcome: 'ok', latency_ms: 3 }],
    receivedAt: 1000,
    upstreamStartedAt: 1000.4,
    upstreamEndedAt: 1003.1,
    bodies: null,
  } as unknown as Source;
  const billed: Billed = {
    tokens: { prompt: 12, completion: 16, cached: 0, cacheWrite: 0, reasoning: 0 },
    source: 'provider',
    costUnits: 3_400_000n,
    finishReason: 'stop',
    upstreamId: 'chatcmpl-bench-0001',
  };
  return { source, billed };
}

const q = JSON.stringify;

/** The served event's JSON written by hand, field by field (only the fields a served JSON request has). */
function written(c: Source, b: Billed, finishedAt: number): string {
  const { tokens: t } = b;
  const k = c.key;
  let s = `{"type":"usage","version":1,"id":${q(c.requestId)},"account_id":${q(k.accountId)},"key_id":${q(k.id)}`;
  s += `,"model":${q(c.model.id)},"provider_name":${q(c.provider.name)},"upstream_model":${q(c.upstreamModel)}`;
  s += `,"upstream_id":${q(b.upstreamId)},"app":${q(c.app)},"http_referer":${q(c.httpReferer)},"api_type":${q(c.api)}`;
  s += `,"streamed":${c.request.stream},"cancelled":${c.cancelled},"finish_reason":${q(b.finishReason)}`;
  s += `,"usage_source":${q(b.source)},"tokens":{"prompt":${t.prompt},"completion":${t.completion}`;
  s += `,"cached":${t.cached},"cache_write":${t.cacheWrite},"reasoning":${t.reasoning}}`;
  s += `,"cost":"${toDecimal(b.costUnits)}","is_byok":false,"error":null`;
  s += `,"started_at":"${new Date(c.startedAt).toISOString()}","finished_at":"${new Date(finishedAt).toISOString()}"`;
  s += `,"latency_ms":${Math.max(0, (c.firstByteAt || finishedAt) - c.startedAt)}`;
  s += `,"generation_time_ms":${Math.max(0, finishedAt - c.startedAt)},"gateway_overhead_us":2300,"attempts":[`;
  c.attempts.forEach((a, i) => {
    s += `${i ? ',' : ''}{"provider":${q(a.provider)},"model":${q(a.model)},"status":${a.status}`;
    s += `,"outcome":${q(a.outcome)},"latency_ms":${a.latency_ms}}`;
  });
  return `${s}]}`;
}

/**
 * The usage event's variants for bench/json-request-cpu.ts: as the proxy builds and the publisher
 * serialises it (usageEventOf, Buffer.from(JSON.stringify)), and the alternative issue 30 tried — the
 * JSON written by hand — plus two of its parts alone. Both give the same bytes. (A third, one fixed
 * object shape, measured 3.40 / 4.87 µs against 3.83 / 4.95 — inside the spread — was a copy of
 * usageEventOf and is not kept.)
 */
export function eventBenchVariants(): { variants: Variant[]; sink: () => number } {
  const { source, billed } = servedCompletion();
  const at = source.startedAt + 4;
  const reference = JSON.stringify(usageEventOf(source, billed, at, 1005));
  if (written(source, billed, at) !== reference) throw new Error('the usage event variants disagree');
  let bytes = 0;
  const each = (name: string, one: () => number): Variant => ({
    name,
    run(n) {
      for (let i = 0; i < n; i++) bytes += one();
    },
  });
  return {
    variants: [
      each(
        'object + JSON',
        () => Buffer.from(JSON.stringify(usageEventOf(source, billed, Date.now(), 1005))).length,
      ),
      each('hand-written', () => Buffer.from(written(source, billed, Date.now())).length),
      each('cost toDecimal', () => toDecimal(billed.costUnits).length),
      each('two ISO dates', () => {
        const t = Date.now();
        return new Date(t).toISOString().length + new Date(t + 1).toISOString().length;
      }),
    ],
    sink: () => bytes,
  };
}
