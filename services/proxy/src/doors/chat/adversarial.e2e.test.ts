import type { UsageEventV1 } from '@tollgate/events';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { readSse } from '../../../test/sse-client';
import { bearer, type ProxyStack, startProxyStack } from '../../../test/stack';

/**
 * Issue 14 finding 1: token counting must never block the event loop. gpt-tokenizer's BPE is
 * quadratic on a run without whitespace, so each adversarial shape below used to freeze the proxy
 * process for seconds (a 150 KB `role`: ~9 s). While each request is served (admission, the
 * no-usage estimate, the cancel path), a concurrent /healthz poll must keep answering within 50 ms.
 */
let stack: ProxyStack;
const RUN = 60_000; // ~2 s of tokenizing each on the old code; well under the 10 MB body limit
const HEALTH_BUDGET_MS = 50;
/**
 * The outputs' budget. While an adversarial output streams, this process is legitimately busy: the
 * simulator writes, the proxy relays and the test client reads up to 1,000 chunks of 1 KB paced 1 ms
 * apart, all in this process, so a poll waits behind that work and its CPU time is this process's too.
 * With three test files at a time on 2 cores a poll took 111 ms in CI (stop 35) with no block. A
 * tokenizer block on the old code held the loop for seconds (~2 s per 60k run), still far above this.
 */
const OUTPUT_BUDGET_MS = 250;
/**
 * The poll shares 2 CPUs with the other test files running in parallel, so one slow poll can be the
 * machine's doing; a retry (with fresh adversarial strings) tells that apart from a real block,
 * which on the old code lasted seconds on every attempt.
 */
const RETRY = { retry: 2 };

beforeAll(async () => {
  stack = await startProxyStack();
});
afterAll(async () => {
  await stack?.close();
});

/**
 * Polls /healthz back to back until `work` settles; returns the slowest answer (ms). Each poll's
 * clock starts when the previous one ended, so a block of the event loop anywhere in between is
 * charged to a poll.
 *
 * A poll's time is its wall time, unless the process itself used less CPU than that during the
 * poll: on a starved machine (the CI host may run many test files on 2 cores, load average 15)
 * wall time measures the scheduler, and the CPU time this process spent is what it did itself.
 * A block by the tokenizer is CPU time of this process (seconds on the old code) either way.
 */
async function slowestHealthzDuring<T>(work: () => Promise<T>): Promise<{ result: T; slowest: number }> {
  let done = false;
  let slowest = 0;
  const cpuMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const poller = (async () => {
    let t0 = performance.now();
    let c0 = cpuMs();
    while (!done) {
      const res = await fetch(`${stack.proxy.url}/healthz`);
      await res.arrayBuffer();
      const now = performance.now();
      const cpu = cpuMs();
      slowest = Math.max(slowest, Math.min(now - t0, cpu - c0));
      t0 = now;
      c0 = cpu;
    }
  })();
  try {
    const result = await work();
    return { result, slowest };
  } finally {
    done = true;
    await poller;
  }
}

function waitForEvent(id: string): Promise<UsageEventV1> {
  return vi.waitFor(
    () => {
      const e = stack.eventFor(id);
      if (!e) throw new Error(`no usage event for ${id} yet`);
      return e;
    },
    { timeout: 20_000, interval: 10 },
  );
}

async function post(body: unknown): Promise<{ status: number; id: string | null }> {
  const res = await fetch(`${stack.api}/chat/completions`, {
    method: 'POST',
    headers: bearer(stack.inference),
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return { status: res.status, id: res.headers.get('x-generation-id') };
}

const model = 'openai/gpt-4o-mini';

/** A streamed completion of the prompt "go" with simulator options, read as SSE. */
const streamGo = (sim: Record<string, unknown>, options?: Parameters<typeof readSse>[2]) =>
  readSse(
    `${stack.api}/chat/completions`,
    {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'go' }], sim }),
    },
    options,
  );
/**
 * A fresh run without whitespace per use: gpt-tokenizer caches the pieces it encoded, so reusing
 * one string would hide the cost from every test after the first.
 */
let runs = 0;
const letters = 'abcdefghijklmnopqrstuvwxyz';
const freshRun = (n = RUN) => `${letters[runs++ % 26]}${letters[Math.floor(runs / 26) % 26]}`.repeat(n / 2);

describe('adversarial prompt shapes do not block the event loop', () => {
  // Warm up the JIT and connections so the first measured request is not a cold start.
  beforeAll(async () => {
    await post({ model, messages: [{ role: 'user', content: 'warm up' }], sim: { omit_usage: true } });
  });

  const run = freshRun;
  const shapes: [string, () => Record<string, unknown>[]][] = [
    ['a long role', () => [{ role: run(), content: 'hi' }]],
    ['a long name', () => [{ role: 'user', name: run(), content: 'hi' }]],
    ['a long tool_call_id', () => [{ role: 'tool', tool_call_id: run(), content: 'ok' }]],
    [
      'long tool arguments',
      () => [
        { role: 'user', content: 'call it' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: run() } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'done' },
      ],
    ],
    ['a long content part', () => [{ role: 'user', content: [{ type: 'text', text: run() }] }]],
    [
      'a long unknown content part',
      () => [{ role: 'user', content: [{ type: 'x_unknown_part', data: run() }] }],
    ],
    ['a long content string', () => [{ role: 'user', content: run() }]],
    [
      'random CJK text',
      () => [
        {
          role: 'user',
          content: Array.from({ length: RUN }, (_, i) => '漢字中文日本語한국어'[(i * 7919 + runs) % 10]).join(
            '',
          ),
        },
      ],
    ],
  ];

  for (const [name, messages] of shapes) {
    it(
      `${name}: /healthz answers within ${HEALTH_BUDGET_MS} ms (admission and the no-usage estimate)`,
      RETRY,
      async () => {
        const { result, slowest } = await slowestHealthzDuring(async () => {
          // omit_usage: the proxy bills its own estimate of the prompt.
          const r = await post({ model, messages: messages(), sim: { omit_usage: true } });
          if (r.status === 200 && r.id) await waitForEvent(r.id);
          return r;
        });
        expect(result.status).toBeLessThan(500);
        expect(slowest, `slowest /healthz: ${slowest.toFixed(1)} ms`).toBeLessThan(HEALTH_BUDGET_MS);
      },
    );
  }
});

describe('adversarial outputs do not block the event loop', () => {
  // One unbroken run of 60k characters over 60 chunks (a fresh one per test).
  let piece = '';
  beforeEach(() => {
    piece = freshRun(1_000);
  });

  it(
    `an unbroken output that ends without usage is estimated within ${OUTPUT_BUDGET_MS} ms`,
    RETRY,
    async () => {
      const { result, slowest } = await slowestHealthzDuring(async () => {
        const r = await streamGo({ piece, completion_tokens: RUN / piece.length, omit_usage: true });
        const id = r.headers.get('x-generation-id')!;
        return { r, event: await waitForEvent(id) };
      });
      expect(result.event).toMatchObject({ usage_source: 'estimated', cancelled: false });
      // Never below the exact count of what was produced: these runs are at most one o200k token per
      // two characters.
      expect(result.event.tokens.completion).toBeGreaterThanOrEqual(RUN / 2);
      expect(slowest, `slowest /healthz: ${slowest.toFixed(1)} ms`).toBeLessThan(OUTPUT_BUDGET_MS);
    },
  );

  it(
    `an unbroken non-streamed output without usage is estimated within ${OUTPUT_BUDGET_MS} ms`,
    RETRY,
    async () => {
      const { result, slowest } = await slowestHealthzDuring(async () => {
        const r = await post({
          model,
          messages: [{ role: 'user', content: 'go' }],
          sim: { piece, completion_tokens: RUN / piece.length, omit_usage: true },
        });
        return waitForEvent(r.id!);
      });
      expect(result.tokens.completion).toBeGreaterThanOrEqual(RUN / 2);
      expect(slowest, `slowest /healthz: ${slowest.toFixed(1)} ms`).toBeLessThan(OUTPUT_BUDGET_MS);
    },
  );

  it(`a cancelled unbroken output is estimated within ${OUTPUT_BUDGET_MS} ms`, RETRY, async () => {
    const { result, slowest } = await slowestHealthzDuring(async () => {
      // The cancelled stream is drained (issue 22); without usage at its end it is estimated.
      const r = await streamGo(
        { piece, completion_tokens: 1_000, inter_token_ms: 1, omit_usage: true },
        { stopAfterData: 70 },
      );
      return waitForEvent(r.headers.get('x-generation-id')!);
    });
    expect(result).toMatchObject({ cancelled: true, usage_source: 'estimated' });
    expect(result.tokens.completion).toBeGreaterThanOrEqual(30_000);
    expect(slowest, `slowest /healthz: ${slowest.toFixed(1)} ms`).toBeLessThan(OUTPUT_BUDGET_MS);
  });
});

describe('provider text in usage events is well-formed (issue 14 finding 2)', () => {
  it('a mid-stream provider error cut at 500 units through an emoji gives a well-formed event', async () => {
    // 'Provider sim failed mid-stream: ' + the message cut to 500 UTF-16 units: the emoji's high
    // surrogate sits at unit 500.
    const message = `${'e'.repeat(499)}😀 and more`;
    const r = await streamGo({ error_after_chunks: 2, error_message: message });
    const event = await waitForEvent(r.headers.get('x-generation-id')!);
    const text = event.error?.message ?? '';
    expect(text).toContain('e'.repeat(499));
    expect((text as string & { isWellFormed(): boolean }).isWellFormed()).toBe(true);
    const errorChunk = r.chunks.find((c) => c.error);
    expect((errorChunk.error.message as string & { isWellFormed(): boolean }).isWellFormed()).toBe(true);
  });
});

describe('deeply nested JSON (issue 14 finding 5, nested-JSON 500)', () => {
  /** JSON text nested `depth` levels (built as text: JSON.stringify itself overflows on it). */
  const nest = (depth: number): string => `${'[{"a":'.repeat(depth)}"x"${'}]'.repeat(depth)}`;

  async function postRaw(text: string): Promise<number> {
    const res = await fetch(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: text,
    });
    await res.arrayBuffer();
    return res.status;
  }

  it('a deeply nested content part gives 400, not 500', async () => {
    const status = await postRaw(
      `{"model":"${model}","messages":[{"role":"user","content":[{"type":"input_data","data":${nest(10_000)}}]}]}`,
    );
    expect(status).toBe(400);
  });

  it('deep nesting in any other field gives 400, not 502', async () => {
    const status = await postRaw(
      `{"model":"${model}","messages":[{"role":"user","content":"hi"}],"response_format":${nest(10_000)}}`,
    );
    expect(status).toBe(400);
  });

  it('ordinary nesting (a tool schema a dozen levels deep) is served', async () => {
    const status = await postRaw(
      `{"model":"${model}","messages":[{"role":"user","content":"hi"}],` +
        `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","x":${nest(6)}}}}]}`,
    );
    expect(status).toBe(200);
  });
});
