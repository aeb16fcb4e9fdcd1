import { EventEmitter } from 'node:events';
import type { UsageEventV1 } from '@tollgate/events';
import { describe, expect, it } from 'vitest';
import { KeyRateLimited, type SpendGuard, StaleKeyRecord } from '../spend/guard';
import { createMetrics, routeName } from './metrics';
import { refusalDecision } from './spend-decisions';

/** The value of one series in the registry's text exposition (undefined: the series is absent). */
async function series(metrics: ReturnType<typeof createMetrics>, line: string): Promise<number | undefined> {
  const text = await metrics.registry.metrics();
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

/** A response as express hands it to the middleware: locals, a status, a close event. */
function fakeResponse(statusCode: number) {
  return Object.assign(new EventEmitter(), { locals: {} as Record<string, unknown>, statusCode });
}

function served(metrics: ReturnType<typeof createMetrics>, route: string, status: number) {
  const res = fakeResponse(status);
  const next = () => {};
  metrics.track({} as never, res as never, next);
  routeName(route)({} as never, res as never, next);
  return res;
}

describe('proxy metrics: the per-request observer', () => {
  it('counts a request by route and status and times it when its response closes', async () => {
    const metrics = createMetrics();
    const res = served(metrics, 'models', 200);
    expect(
      await series(metrics, 'tollgate_proxy_requests_total{route="models",status="200"}'),
    ).toBeUndefined();
    res.emit('close');
    res.emit('close'); // one listener, once
    expect(await series(metrics, 'tollgate_proxy_requests_total{route="models",status="200"}')).toBe(1);
    expect(await series(metrics, 'tollgate_proxy_request_duration_seconds_count{route="models"}')).toBe(1);
  });

  it("reads a completion's provider wait, overhead and first token at close", async () => {
    const metrics = createMetrics();
    const res = served(metrics, 'chat_completions', 200);
    const start = res.locals.metricsStart as number;
    res.locals.completion = {
      model: { id: 'openai/gpt-4o' },
      provider: { name: 'openai' },
      request: { stream: true },
      upstreamStartedAt: start + 1,
      upstreamEndedAt: start + 3,
      firstTokenAt: start + 2,
    };
    res.emit('close');
    const labels =
      'gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="openai/gpt-4o"';
    expect(
      await series(
        metrics,
        'tollgate_proxy_completions_total{model="openai/gpt-4o",provider="openai",status="200"}',
      ),
    ).toBe(1);
    expect(
      await series(metrics, `gen_ai_client_operation_duration_seconds_sum{${labels},error_type=""}`),
    ).toBeCloseTo(0.002, 6);
    expect(await series(metrics, `gen_ai_server_time_to_first_token_seconds_sum{${labels}}`)).toBeCloseTo(
      0.002,
      6,
    );
    expect(await series(metrics, 'tollgate_gateway_overhead_seconds_count{streamed="true"}')).toBe(1);
  });

  it('labels a failed completion with its status and records no first token', async () => {
    const metrics = createMetrics();
    const res = fakeResponse(502);
    res.locals = { route: 'chat_completions', metricsStart: performance.now() };
    res.locals.completion = {
      model: { id: 'm' },
      provider: { name: 'p' },
      request: { stream: false },
      upstreamStartedAt: performance.now(),
      upstreamEndedAt: 0,
      firstTokenAt: 0,
    };
    metrics.responseClosed(res);
    const labels = 'gen_ai_operation_name="chat",gen_ai_provider_name="p",gen_ai_request_model="m"';
    expect(
      await series(metrics, `gen_ai_client_operation_duration_seconds_count{${labels},error_type="502"}`),
    ).toBe(1);
    expect(
      await series(metrics, `gen_ai_server_time_to_first_token_seconds_count{${labels}}`),
    ).toBeUndefined();
    expect(await series(metrics, 'tollgate_gateway_overhead_seconds_count{streamed="false"}')).toBe(1);
  });
});

describe('proxy metrics: usage events', () => {
  it('observes tokens by type and adds the cost by model', async () => {
    const metrics = createMetrics();
    const event = {
      provider_name: 'openai',
      model: 'openai/gpt-4o',
      tokens: { prompt: 10, completion: 5 },
      cost: '0.25',
    };
    metrics.usageEvent(event as unknown as UsageEventV1);
    metrics.usageEvent({ ...event, cost: '0' } as unknown as UsageEventV1);
    expect(await series(metrics, 'tollgate_proxy_usage_events_total')).toBe(2);
    const labels =
      'gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="openai/gpt-4o"';
    expect(await series(metrics, `gen_ai_client_token_usage_sum{${labels},gen_ai_token_type="input"}`)).toBe(
      20,
    );
    expect(await series(metrics, `gen_ai_client_token_usage_sum{${labels},gen_ai_token_type="output"}`)).toBe(
      10,
    );
    expect(
      await series(metrics, 'tollgate_proxy_cost_usd_total{model="openai/gpt-4o",provider="openai"}'),
    ).toBe(0.25);
  });
});

describe('proxy metrics: spend decisions', () => {
  const refusing = (err: Error): SpendGuard => ({
    admit: async () => {
      throw err;
    },
    settle: async () => {},
  });

  it('names each refusal by its type', () => {
    expect(
      ['key_limit_exceeded', 'team_limit_exceeded', 'payment_required', 'rate_limited', 'other'].map((type) =>
        refusalDecision(Object.assign(new Error(), { type })),
      ),
    ).toEqual(['key_limit', 'team_limit', 'credits', 'token_rate', 'unavailable']);
  });

  it('counts admitted, untracked and refused admissions, and passes the refusal on', async () => {
    const metrics = createMetrics();
    const reservation = { id: 'r' } as never;
    const admitting = metrics.instrumentGuard({ admit: async () => reservation, settle: async () => {} });
    expect(await admitting.admit({} as never)).toBe(reservation);
    await metrics.instrumentGuard({ admit: async () => null, settle: async () => {} }).admit({} as never);
    const credits = Object.assign(new Error('no credits'), { type: 'payment_required' });
    await expect(metrics.instrumentGuard(refusing(credits)).admit({} as never)).rejects.toBe(credits);
    expect(await series(metrics, 'tollgate_proxy_spend_decisions_total{decision="admitted"}')).toBe(1);
    expect(await series(metrics, 'tollgate_proxy_spend_decisions_total{decision="untracked"}')).toBe(1);
    expect(await series(metrics, 'tollgate_proxy_spend_decisions_total{decision="credits"}')).toBe(1);
  });

  it('counts no decision for a recalled key record (stale, or over its rate limit)', async () => {
    const metrics = createMetrics();
    for (const err of [new StaleKeyRecord(), new KeyRateLimited()])
      await expect(metrics.instrumentGuard(refusing(err)).admit({} as never)).rejects.toBe(err);
    expect((await metrics.registry.metrics()).match(/^tollgate_proxy_spend_decisions_total\{/m)).toBeNull();
  });

  it('counts the pending holds the sweep expired', async () => {
    const metrics = createMetrics();
    metrics.pendingHoldsExpired(3);
    expect(await series(metrics, 'tollgate_proxy_spend_pending_holds_expired_total')).toBe(3);
  });
});

describe('proxy metrics: the usage publisher gauges', () => {
  it('reads an idle publisher before one is watched, then the publisher at each scrape', async () => {
    const metrics = createMetrics();
    expect(await series(metrics, 'tollgate_proxy_publisher_connected')).toBe(0);
    expect(await series(metrics, 'tollgate_proxy_usage_admitting')).toBe(1);
    expect(await series(metrics, 'tollgate_proxy_publisher_dropped_events_total')).toBe(0);
    const stats = { buffered: 4, dropped: 2, connected: true, published: 7, spooled: 3, spoolBytes: 512 };
    let admitting = false;
    metrics.watchPublisher({ stats: () => stats, canAdmit: () => admitting });
    expect(await series(metrics, 'tollgate_proxy_publisher_buffered_events')).toBe(4);
    expect(await series(metrics, 'tollgate_proxy_publisher_connected')).toBe(1);
    expect(await series(metrics, 'tollgate_proxy_publisher_spooled_events')).toBe(3);
    expect(await series(metrics, 'tollgate_proxy_publisher_spool_bytes')).toBe(512);
    expect(await series(metrics, 'tollgate_proxy_usage_admitting')).toBe(0);
    expect(await series(metrics, 'tollgate_proxy_publisher_dropped_events_total')).toBe(2);
    expect(await series(metrics, 'tollgate_proxy_publisher_confirmed_events_total')).toBe(7);
    stats.published = 9;
    admitting = true;
    // Read, not added: a second scrape shows the publisher's total, not the sum of scrapes.
    expect(await series(metrics, 'tollgate_proxy_publisher_confirmed_events_total')).toBe(9);
    expect(await series(metrics, 'tollgate_proxy_usage_admitting')).toBe(1);
  });
});
