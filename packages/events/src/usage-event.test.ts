import { describe, expect, it } from 'vitest';
import { parseUsageEvent, type UsageEvent, usageEventSchemas } from './usage-event';

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
});
