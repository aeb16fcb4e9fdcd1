import { describe, expect, it } from 'vitest';
import {
  isPlainUsageEventV1,
  parseUsageEvent,
  type UsageEvent,
  usageEventSchemas,
  usageEventV1,
} from './usage-event';

const event: UsageEvent = {
  type: 'usage',
  version: 1,
  id: 'gen-1795222302-OZbIgJ6uT562ReaCvJK7',
  account_id: '6f1c1f8e-5a1b-4c1e-9a4e-2f7b8c9d0e1f',
  key_id: '7a2d2e9f-6b2c-4d2f-8b5f-3a8c9d0e1f2a',
  model: 'openai/gpt-4o-mini',
  provider_name: 'sim',
  upstream_model: 'gpt-4o-mini',
  upstream_id: 'chatcmpl-1',
  app: 'smoke',
  streamed: true,
  cancelled: false,
  finish_reason: 'stop',
  usage_source: 'provider',
  tokens: { prompt: 10, completion: 25, cached: 0, cache_write: 0, reasoning: 0 },
  cost: '0.0000165',
  is_byok: false,
  error: null,
  started_at: '2026-11-21T00:51:42.307Z',
  finished_at: '2026-11-21T00:51:42.838Z',
  latency_ms: 156,
  generation_time_ms: 531,
};

describe('parseUsageEvent', () => {
  it('accepts a v1 event unchanged', () => {
    expect(parseUsageEvent(JSON.stringify(event))).toEqual({ ok: true, event });
  });

  it('drops NUL characters from provider text, so Postgres can store the event (no poison message)', () => {
    const dirty = {
      ...event,
      finish_reason: 'st\u0000op',
      upstream_id: '\u0000x',
      error: { code: 500, message: 'a\u0000b' },
    };
    const parsed = parseUsageEvent(JSON.stringify(dirty));
    expect(parsed).toMatchObject({
      ok: true,
      event: { finish_reason: 'stop', upstream_id: 'x', error: { message: 'ab' } },
    });
  });

  it('repairs lone surrogates (Postgres jsonb rejects them) and keeps pairs intact', () => {
    // What JSON.stringify makes of a provider message cut through a surrogate pair.
    const cut = `${'a'.repeat(3)}\ud83d`;
    const dirty = {
      ...event,
      finish_reason: '\udc00stop',
      app: 'app \ud83d\ude00 ok',
      error: { code: 500, message: cut },
    };
    const parsed = parseUsageEvent(JSON.stringify(dirty));
    expect(parsed).toMatchObject({
      ok: true,
      event: { finish_reason: '\ufffdstop', app: 'app 😀 ok', error: { message: 'aaa\ufffd' } },
    });
    const e = (parsed as { event: typeof event }).event;
    for (const s of [e.finish_reason, e.app, e.error?.message]) {
      expect((s as string & { isWellFormed(): boolean }).isWellFormed()).toBe(true);
    }
  });

  it('refuses what billing cannot store or trust, naming the field', () => {
    expect(parseUsageEvent('{')).toEqual({ ok: false, reason: 'body is not JSON' });
    const bad = parseUsageEvent(JSON.stringify({ ...event, tokens: { ...event.tokens, prompt: 2 ** 60 } }));
    expect(bad).toMatchObject({ ok: false, reason: expect.stringContaining('tokens.prompt') });
    const negative = parseUsageEvent(JSON.stringify({ ...event, cost: '-1' }));
    expect(negative).toMatchObject({ ok: false, reason: expect.stringContaining('cost') });
    const noModel = parseUsageEvent(JSON.stringify({ ...event, model: '\u0000' }));
    expect(noModel).toMatchObject({ ok: false, reason: expect.stringContaining('model') });
  });

  it('carries the gateway overhead in µs when the proxy measured it, and parses events without it', () => {
    expect(parseUsageEvent(JSON.stringify({ ...event, gateway_overhead_us: 412 }))).toMatchObject({
      ok: true,
      event: { gateway_overhead_us: 412 },
    });
    const older = parseUsageEvent(JSON.stringify(event));
    expect(older).toMatchObject({ ok: true });
    expect((older as { event: object }).event).not.toHaveProperty('gateway_overhead_us');
    for (const bad of [-1, 1.5, '412', null]) {
      expect(parseUsageEvent(JSON.stringify({ ...event, gateway_overhead_us: bad }))).toMatchObject({
        ok: false,
        reason: expect.stringContaining('gateway_overhead_us'),
      });
    }
  });

  it('decodes by the catalog (type → version → schema) and names an unknown type or version', () => {
    expect(usageEventSchemas.usage[1]).toBeDefined();
    expect(parseUsageEvent(JSON.stringify({ ...event, type: 'refund' }))).toEqual({
      ok: false,
      reason: 'type: unknown event type "refund"',
    });
    expect(parseUsageEvent(JSON.stringify({ ...event, version: 2 }))).toEqual({
      ok: false,
      reason: 'version: unknown version 2 of "usage"',
    });
    expect(parseUsageEvent('null')).toMatchObject({ ok: false, reason: expect.stringContaining('type') });
    expect(parseUsageEvent(JSON.stringify({ ...event, type: 'toString' }))).toMatchObject({ ok: false });
  });

  describe('fast path (no zod pass for an event exactly as the proxy publishes it)', () => {
    const withAttempts = {
      ...event,
      http_referer: 'https://example.com/',
      error: { code: 502, message: 'upstream said no' },
      attempts: [
        { provider: 'a', model: 'm', status: 503, outcome: 'http_503', latency_ms: 12 },
        { provider: 'b', model: 'm', status: null, outcome: 'ok', latency_ms: 40 },
      ],
    };

    it('takes the fast path for ordinary events, which zod returns unchanged', () => {
      for (const e of [
        event,
        withAttempts,
        { ...event, attempts: [] },
        { ...event, http_referer: null },
        { ...event, api_type: 'messages' },
        { ...event, api_type: 'responses', session_id: '01a2175f-f50c', withheld_tools: ['web_search'] },
        {
          ...event,
          api_type: 'messages',
          session_id: 'e1e64ac6-255c-4f70-b8a8-4b90caf5f347',
          end_user: '{"device_id":"d"}',
        },
        { ...event, session_id: null, end_user: null },
      ]) {
        const json = JSON.parse(JSON.stringify(e));
        expect(isPlainUsageEventV1(json)).toBe(true);
        expect(usageEventV1.parse(json)).toEqual(json);
        expect(parseUsageEvent(JSON.stringify(e))).toEqual({ ok: true, event: json });
      }
    });

    // Every variant: the fast path may only accept what zod accepts, with the same output; what it
    // does not accept must get exactly zod's verdict (parseUsageEvent falls back to zod).
    const set =
      (path: string[], value: unknown) =>
      (base: object): object | null => {
        const copy = JSON.parse(JSON.stringify(base));
        let o = copy;
        for (const k of path.slice(0, -1)) {
          o = o[k];
          if (o === undefined) return null; // e.g. attempts[0] of an event without attempts
        }
        const last = path.at(-1) as string;
        if (value === DELETE) delete o[last];
        else o[last] = value;
        return copy;
      };
    const DELETE = Symbol('delete');
    const texts = ['', 'x', 'a\u0000b', '\ud83d', 'ok \ud83d\ude00', '\udc00x', ' ', 'é'];
    const numbers = [0, 1, -1, 1.5, 2 ** 53, 2 ** 53 - 1, -0, '1', null, true];
    const uuids = [
      '6f1c1f8e-5a1b-4c1e-9a4e-2f7b8c9d0e1f',
      '6F1C1F8E-5A1B-4C1E-9A4E-2F7B8C9D0E1F',
      '00000000-0000-0000-0000-000000000000',
      'ffffffff-ffff-ffff-ffff-ffffffffffff',
      '6f1c1f8e-5a1b-0c1e-9a4e-2f7b8c9d0e1f',
      '6f1c1f8e-5a1b-4c1e-7a4e-2f7b8c9d0e1f',
      '6f1c1f8e5a1b4c1e9a4e2f7b8c9d0e1f',
      '',
    ];
    const dates = [
      '2026-11-21T00:51:42Z',
      '2026-11-21T00:51:42.123456789Z',
      '2024-02-29T00:00:00Z',
      '2026-02-29T00:00:00Z',
      '2000-02-29T00:00:00Z',
      '1900-02-29T00:00:00Z',
      '0000-01-01T00:00:00.000Z',
      '2026-11-21T24:00:00Z',
      '2026-11-21T00:51:60Z',
      '2026-11-21T00:51:42+00:00',
      '2026-11-21T00:51:42',
      '2026-11-21 00:51:42Z',
      '2026-13-01T00:00:00Z',
      '2026-04-31T00:00:00Z',
    ];
    const variants: Array<(b: object) => object | null> = [
      set(['extra'], 1),
      set(['tokens', 'extra'], 1),
      set(['error'], { code: 500, message: 'm', extra: 1 }),
      set(['error'], { code: 500 }),
      set(['error'], { code: 500.5, message: 'm' }),
      set(['error'], { code: -1, message: 'm' }),
      set(['error'], 'boom'),
      set(['attempts'], null),
      set(['attempts'], {}),
      set(
        ['attempts'],
        Array.from({ length: 33 }, () => ({
          provider: 'a',
          model: 'm',
          status: null,
          outcome: 'ok',
          latency_ms: 1,
        })),
      ),
      set(
        ['attempts'],
        Array.from({ length: 32 }, () => ({
          provider: 'a',
          model: 'm',
          status: null,
          outcome: 'ok',
          latency_ms: 1,
        })),
      ),
      set(
        ['attempts'],
        [{ provider: 'a', model: 'm', status: null, outcome: 'ok', latency_ms: 1, extra: 2 }],
      ),
      set(['attempts'], [{ provider: 'a', model: 'm', status: 1.5, outcome: 'ok', latency_ms: 1 }]),
      set(['attempts'], [{ provider: 'a', model: 'm', outcome: 'ok', latency_ms: 1 }]),
      set(['attempts'], ['x']),
      set(['type'], 'refund'),
      set(['version'], 2),
      set(['version'], '1'),
      set(['id'], 'gen-1-abc'),
      set(['id'], 'gen-1795222302-OZbIgJ6uT562ReaCvJK7x'),
      set(['usage_source'], 'guess'),
      set(['streamed'], 1),
      set(['is_byok'], null),
      set(['cost'], '0'),
      set(['cost'], '1.'),
      set(['cost'], '.5'),
      set(['cost'], '-1'),
      set(['cost'], 0.5),
      set(['cost'], '0.00000000001'),
      set(['tokens'], null),
      set(['tokens', 'reasoning'], DELETE),
      set(['http_referer'], DELETE),
      set(['http_referer'], 5),
      set(['api_type'], 'chat'),
      set(['api_type'], DELETE),
      set(['api_type'], 'completions'),
      set(['api_type'], null),
      set(['withheld_tools'], []),
      set(['withheld_tools'], ['web_search', 'file_search']),
      set(['withheld_tools'], ['']),
      set(['withheld_tools'], [5]),
      set(['withheld_tools'], ['x'.repeat(64)]),
      set(['withheld_tools'], ['x'.repeat(65)]),
      set(
        ['withheld_tools'],
        Array.from({ length: 33 }, () => 't'),
      ),
      set(['withheld_tools'], 'web_search'),
      set(['withheld_tools'], null),
      ...['', 'x', 'a\u0000b', '\ud83d', 'é'].map((v) => set(['withheld_tools'], [v])),
      set(['session_id'], 's-1'),
      set(['session_id'], 7),
      set(['session_id'], 'a\u0000b'),
      set(['end_user'], 'u'),
      set(['end_user'], false),
      ...['model', 'upstream_id', 'app', 'finish_reason', 'latency_ms', 'started_at'].map((k) =>
        set([k], DELETE),
      ),
    ];
    for (const k of [
      'model',
      'provider_name',
      'upstream_model',
      'upstream_id',
      'app',
      'http_referer',
      'finish_reason',
    ])
      for (const v of [...texts, null, 5]) variants.push(set([k], v));
    for (const v of [...texts, null]) {
      variants.push(set(['error'], { code: 500, message: v }));
      variants.push(set(['attempts', '0', 'provider'], v), set(['attempts', '0', 'outcome'], v));
    }
    for (const v of numbers) {
      for (const path of [
        ['latency_ms'],
        ['generation_time_ms'],
        ['gateway_overhead_us'],
        ['tokens', 'prompt'],
        ['tokens', 'cache_write'],
      ])
        variants.push(set(path, v));
      variants.push(set(['attempts', '0', 'latency_ms'], v), set(['attempts', '0', 'status'], v));
    }
    for (const v of uuids) variants.push(set(['account_id'], v), set(['key_id'], v), set(['team_id'], v));
    variants.push(set(['team_id'], null));
    for (const v of dates) variants.push(set(['started_at'], v), set(['finished_at'], v));

    it(`agrees with zod on ${variants.length} variants of two events`, () => {
      let fast = 0;
      for (const base of [event, withAttempts])
        for (const variant of variants) {
          const input = variant(base);
          if (input === null) continue;
          const json = JSON.parse(JSON.stringify(input));
          const viaZod = usageEventV1.safeParse(JSON.parse(JSON.stringify(input)));
          if (isPlainUsageEventV1(json)) {
            fast++;
            expect(viaZod.success, JSON.stringify(input)).toBe(true);
            expect(viaZod.data).toEqual(json);
          }
          const parsed = parseUsageEvent(JSON.stringify(input));
          expect(parsed.ok, JSON.stringify(input)).toBe(viaZod.success);
          if (parsed.ok) expect(parsed.event).toEqual(viaZod.data);
        }
      // The fast path is really used (not everything falls back), and really checks.
      expect(fast).toBeGreaterThan(50);
      expect(fast).toBeLessThan(variants.length);
    });
  });
});
