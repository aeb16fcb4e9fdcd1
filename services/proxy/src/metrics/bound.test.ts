import { seededRandom } from '@tollgate/testkit';
import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { BoundCounter, BoundHistogram } from './bound';

const BUCKETS = [0.001, 0.01, 0.1, 1, 10];

/** The same metrics twice: prom-client's and the bound ones, each in its own registry. */
function pair() {
  const ours = new Registry();
  const theirs = new Registry();
  const make = (r: Registry, bound: boolean) => ({
    plain: bound
      ? new BoundCounter('t_plain_total', 'no labels', [], r)
      : new Counter({ name: 't_plain_total', help: 'no labels', registers: [r] }),
    requests: bound
      ? new BoundCounter('t_requests_total', 'by route and status', ['route', 'status'], r)
      : new Counter({
          name: 't_requests_total',
          help: 'by route and status',
          labelNames: ['route', 'status'],
          registers: [r],
        }),
    duration: bound
      ? new BoundHistogram('t_duration_seconds', 'by route', ['route'], BUCKETS, r)
      : new Histogram({
          name: 't_duration_seconds',
          help: 'by route',
          labelNames: ['route'],
          buckets: BUCKETS,
          registers: [r],
        }),
    tokens: bound
      ? new BoundHistogram('t_tokens', 'four labels', ['op', 'provider', 'model', 'type'], BUCKETS, r)
      : new Histogram({
          name: 't_tokens',
          help: 'four labels',
          labelNames: ['op', 'provider', 'model', 'type'],
          buckets: BUCKETS,
          registers: [r],
        }),
    idle: bound
      ? new BoundHistogram('t_idle_seconds', 'no labels', [], BUCKETS, r)
      : new Histogram({ name: 't_idle_seconds', help: 'no labels', buckets: BUCKETS, registers: [r] }),
  });
  return { ours, theirs, a: make(ours, true), b: make(theirs, false) };
}

function feed(p: ReturnType<typeof pair>, seed: number, n: number) {
  const rand = seededRandom(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)] as T;
  for (let i = 0; i < n; i++) {
    const route = pick(['chat', 'models', 'key', 'a "quoted"\\route\n']);
    const status = pick(['200', '400', '503']);
    const v = rand() < 0.1 ? 50 : rand() < 0.1 ? 0.1 : rand() * 2;
    const [op, provider, model, type] = [
      pick(['chat']),
      pick(['p1', 'p2']),
      pick(['m/a', 'm/b', 'm/c']),
      pick(['input', 'output']),
    ];
    for (const side of [p.a, p.b]) {
      side.plain.inc();
      side.requests.labels(route, status).inc(i % 3 === 0 ? 2.5 : 1);
      side.duration.labels(route).observe(v);
      side.tokens.labels(op, provider, model, type).observe(Math.round(v * 100));
      side.idle.observe(v);
    }
  }
}

describe('bound counters and histograms', () => {
  it('expose the same text and JSON as prom-client for the same observations', async () => {
    for (const seed of [1, 2, 3]) {
      const p = pair();
      feed(p, seed, 500);
      expect(await p.ours.metrics()).toBe(await p.theirs.metrics());
      expect(await p.ours.getMetricsAsJSON()).toEqual(await p.theirs.getMetricsAsJSON());
    }
  });

  it('aggregate across cluster workers as prom-client does', async () => {
    const workers = [pair(), pair()];
    workers.forEach((p, i) => {
      feed(p, 10 + i, 200);
    });
    const ours = AggregatorRegistry.aggregate(
      await Promise.all(workers.map((p) => p.ours.getMetricsAsJSON())),
    );
    const theirs = AggregatorRegistry.aggregate(
      await Promise.all(workers.map((p) => p.theirs.getMetricsAsJSON())),
    );
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('start empty (a metric without labels at zero), reset like prom-client, and refuse what it refuses', async () => {
    const p = pair();
    expect(await p.ours.metrics()).toBe(await p.theirs.metrics());
    feed(p, 5, 50);
    p.ours.resetMetrics();
    p.theirs.resetMetrics();
    expect(await p.ours.metrics()).toBe(await p.theirs.metrics());
    feed(p, 6, 20);
    expect(await p.ours.metrics()).toBe(await p.theirs.metrics());
    expect(() => p.a.requests.labels('chat', '200').inc(-1)).toThrow('decrease');
    expect(() => p.a.duration.labels('chat').observe(Number.NaN)).toThrow(TypeError);
    expect(() => new BoundHistogram('t_le', 'x', ['le'], BUCKETS, new Registry())).toThrow('reserved');
  });

  it('bind a child once: the same object for the same label values, no new series per call', () => {
    const r = new Registry();
    const h = new BoundHistogram('t_h', 'x', ['a', 'b'], BUCKETS, r);
    const child = h.labels('x', 'y');
    expect(h.labels('x', 'y')).toBe(child);
    expect(h.labels('x', 'z')).not.toBe(child);
    expect(h.labels('y', 'y')).not.toBe(child);
  });
});
