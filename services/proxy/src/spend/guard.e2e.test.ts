import { loadCatalog, worstCaseCost } from '@tollgate/catalog';
import { AppError } from '@tollgate/errors';
import { toUnits } from '@tollgate/money';
import { estimatePromptTokens } from '@tollgate/tokens';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Json, readSse } from '../../test/sse-client';
import { bearer, type ProxyStack, startProxyStack } from '../../test/stack';
import { DEFAULT_CATALOG_PATH } from '../config';
import type { SpendGuard } from './guard';

/** A guard that records every call and refuses the keys listed in `refuse`. */
function recordingGuard() {
  const admits: { keyId: string; worstCaseCostUnits: bigint; requestId: string }[] = [];
  const settles: { reservation: unknown; costUnits: bigint }[] = [];
  const refuse = new Map<string, AppError>();
  const guard: SpendGuard = {
    async admit({ key, worstCaseCostUnits, requestId }) {
      admits.push({ keyId: key.id, worstCaseCostUnits, requestId });
      const err = refuse.get(key.id);
      if (err) throw err;
      return { keyId: key.id, accountId: key.accountId, requestId, keyTracked: false, accountTracked: false };
    },
    async settle(reservation, costUnits) {
      settles.push({ reservation, costUnits });
    },
  };
  return { guard, admits, settles, refuse };
}

const rec = recordingGuard();
let stack: ProxyStack;
const catalog = loadCatalog(DEFAULT_CATALOG_PATH, { PROVIDER_SIM_URL: 'http://x' });
const messages = [{ role: 'user', content: 'spend guard' }];

beforeAll(async () => {
  stack = await startProxyStack({ deps: { guard: rec.guard } });
});
afterAll(async () => {
  await stack?.close();
});

const settlesFor = (requestId: string) =>
  rec.settles.filter((s) => (s.reservation as { requestId?: string } | null)?.requestId === requestId);

describe('spend guard seam', () => {
  it('admits with the worst-case cost before forwarding and settles once with the final cost', async () => {
    const res = await fetch(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({
        model: 'openai/gpt-4o-mini',
        messages,
        max_tokens: 50,
        sim: { completion_tokens: 5 },
      }),
    });
    const body = (await res.json()) as Json;
    expect(res.status, JSON.stringify(body)).toBe(200);
    const admit = rec.admits.find((a) => a.requestId === body.id);
    expect(admit).toEqual({
      keyId: stack.inference.id,
      requestId: body.id,
      worstCaseCostUnits: worstCaseCost(
        catalog.model('openai/gpt-4o-mini')!,
        estimatePromptTokens(messages),
        { maxTokens: 50 },
      ),
    });
    await vi.waitFor(() => expect(settlesFor(body.id)).toHaveLength(1));
    expect(settlesFor(body.id)[0]!.costUnits).toBe(toUnits(body.usage.cost));
  });

  it('reserves the larger token limit once per completion (n)', async () => {
    const res = await fetch(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({
        model: 'openai/gpt-4o-mini',
        messages,
        max_tokens: 40,
        max_completion_tokens: 300,
        n: 3,
      }),
    });
    // The simulator, like some providers, serves one completion only (400): admission came first.
    await res.body?.cancel();
    const requestId = res.headers.get('x-generation-id');
    const admit = rec.admits.find((a) => a.requestId === requestId);
    expect(admit?.worstCaseCostUnits).toBe(
      worstCaseCost(catalog.model('openai/gpt-4o-mini')!, estimatePromptTokens(messages), {
        maxTokens: 300,
        n: 3,
      }),
    );
  });

  it('counts the tool definitions in the reserved prompt (providers bill them as input)', async () => {
    const tools = [
      {
        type: 'function',
        function: {
          name: 'lookup_weather',
          description: 'Looks up the weather of a city. '.repeat(40),
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
    ];
    const res = await fetch(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages, max_tokens: 20, tools }),
    });
    await res.body?.cancel();
    const admit = rec.admits.find((a) => a.requestId === res.headers.get('x-generation-id'));
    const model = catalog.model('openai/gpt-4o-mini')!;
    const withTools = estimatePromptTokens(messages, JSON.stringify(tools));
    expect(withTools).toBeGreaterThan(estimatePromptTokens(messages) + 200);
    expect(admit?.worstCaseCostUnits).toBe(worstCaseCost(model, withTools, { maxTokens: 20 }));
  });

  it('rejects tools or functions that are not arrays with 400 naming the field', async () => {
    for (const [field, value] of [
      ['tools', { type: 'function' }],
      ['functions', 'f'],
    ] as const) {
      const res = await fetch(`${stack.api}/chat/completions`, {
        method: 'POST',
        headers: bearer(stack.inference),
        body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages, [field]: value }),
      });
      const body = (await res.json()) as Json;
      expect(res.status).toBe(400);
      expect(body.error.message).toBe(`${field}: expected an array`);
    }
  });

  it('rejects n outside 1..128 with 400 naming the field, before admission', async () => {
    for (const n of [0, 129, 1.5, '2']) {
      const res = await fetch(`${stack.api}/chat/completions`, {
        method: 'POST',
        headers: bearer(stack.inference),
        body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages, n }),
      });
      const body = (await res.json()) as Json;
      expect(res.status).toBe(400);
      expect(body.error.message).toMatch(/^n: /);
    }
  });

  it('refuses with the guard error before anything is forwarded or published', async () => {
    const key = await stack.keys.createKey(stack.account.id, { name: 'over limit' });
    rec.refuse.set(key.id, new AppError('key_limit_exceeded', 'This key has reached its daily spend limit'));
    const upstreamBefore = stack.upstreamRequests;
    for (const stream of [false, true]) {
      const res = await fetch(`${stack.api}/chat/completions`, {
        method: 'POST',
        headers: bearer(key),
        body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages, stream }),
      });
      const body = (await res.json()) as Json;
      expect(res.status, JSON.stringify(body)).toBe(403);
      expect(body.error.metadata.error_type).toBe('key_limit_exceeded');
    }
    rec.refuse.set(key.id, new AppError('payment_required', 'Out of credits'));
    const res = await fetch(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: bearer(key),
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages }),
    });
    expect(res.status).toBe(402);
    expect(stack.upstreamRequests).toBe(upstreamBefore);
    // Barrier: a later admitted request's event lands; none ever came for the refused key.
    const ok = await fetch(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages, sim: { completion_tokens: 1 } }),
    });
    const okId = ok.headers.get('x-generation-id')!;
    await vi.waitFor(() => expect(stack.eventFor(okId)).toBeDefined());
    expect(stack.events.filter((e) => e.key_id === key.id)).toEqual([]);
    // Counted as refusals (issue 28): the spend limit and the credits are both `limit`.
    await vi.waitFor(() => expect(stack.refusals.filter((e) => e.key_id === key.id)).toHaveLength(3));
    expect(stack.refusals.filter((e) => e.key_id === key.id).map((e) => [e.status, e.error_type])).toEqual([
      [403, 'limit'],
      [403, 'limit'],
      [402, 'limit'],
    ]);
    expect(
      rec.settles.filter((s) => (s.reservation as { requestId?: string })?.requestId === undefined),
    ).toEqual([]);
  });

  it('settles exactly once with 0 when the provider refuses, and with the billed cost when the client cancels', async () => {
    const refused = await fetch(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages, sim: { error_status: 500 } }),
    });
    expect(refused.status).toBe(502);
    const refusedId = refused.headers.get('x-generation-id')!;
    await vi.waitFor(() => expect(settlesFor(refusedId)).toHaveLength(1));
    expect(settlesFor(refusedId)[0]!.costUnits).toBe(0n);

    const r = await readSse(
      `${stack.api}/chat/completions`,
      {
        method: 'POST',
        headers: bearer(stack.inference),
        body: JSON.stringify({
          model: 'openai/gpt-4o-mini',
          messages,
          stream: true,
          sim: { completion_tokens: 100, inter_token_ms: 20 },
        }),
      },
      { stopAfterData: 4 },
    );
    const id = r.headers.get('x-generation-id')!;
    // The reservation stays while the provider's answer is drained for its usage (issue 22).
    expect(settlesFor(id)).toHaveLength(0);
    const event = await vi.waitFor(
      () => {
        const e = stack.eventFor(id);
        if (!e) throw new Error('no event yet');
        return e;
      },
      { timeout: 10_000 },
    );
    expect(event).toMatchObject({ cancelled: true, usage_source: 'provider', tokens: { completion: 100 } });
    await vi.waitFor(() => expect(settlesFor(id)).toHaveLength(1));
    expect(settlesFor(id)[0]!.costUnits).toBe(toUnits(event.cost));
    expect(settlesFor(id)[0]!.costUnits).toBeGreaterThan(0n);
  });
});
