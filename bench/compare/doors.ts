/**
 * The doors phase of bench/compare.ts (`BENCH_ONLY=doors`, opt-in; issue 30 "the Messages and
 * Responses front doors and embeddings … measured the same way and within 10 % of chat completions").
 * Every door goes through the same Tollgate proxy to the same upstream (bench/compare/upstream.ts):
 * chat, Messages translated (OpenAI-format provider), Messages native (Anthropic-format provider),
 * Responses (translated to the upstream's chat completions), embeddings. Sequential added latency
 * p50/p99 (rounds interleaved door by door, the same `seq` job as the chat phase) and proxy-stack CPU
 * µs per request at a fixed rate (the same `rate` job and CPU snapshots), each as a ratio to chat.
 */

export interface DoorRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface DoorsContext {
  proxyUrl: string;
  key: string;
  rounds: number;
  seqCount: number;
  rate: number;
  seconds: number;
  load: <T>(job: Record<string, unknown>) => Promise<T>;
  quiesce: () => Promise<void>;
  /** CPU ms per process group used while `run` runs (the chat phase's snapshots). */
  cpuOf: (run: () => Promise<void>) => Promise<Record<string, number>>;
  pct: (xs: number[], p: number) => number;
  log: (s: string) => void;
}

const prompt = 'Hello! Summarise what a model gateway does in two sentences.';

/** The request each door is measured with (non-streamed, the chat phase's size). */
export function doorRequests(proxyUrl: string, key: string): Record<string, DoorRequest> {
  const auth = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
  const anthropic = {
    'content-type': 'application/json',
    'x-api-key': key,
    'anthropic-version': '2023-06-01',
  };
  const messages = (model: string) =>
    JSON.stringify({ model, max_tokens: 64, messages: [{ role: 'user', content: prompt }] });
  return {
    chat: {
      url: `${proxyUrl}/api/v1/chat/completions`,
      headers: auth,
      body: JSON.stringify({
        model: 'bench/fast',
        messages: [{ role: 'user', content: prompt }],
        max_tokens: 64,
      }),
    },
    'messages (translated)': {
      url: `${proxyUrl}/api/v1/messages`,
      headers: anthropic,
      body: messages('bench/fast'),
    },
    'messages (native)': {
      url: `${proxyUrl}/api/v1/messages`,
      headers: anthropic,
      body: messages('bench/claude'),
    },
    responses: {
      url: `${proxyUrl}/api/v1/responses`,
      headers: auth,
      body: JSON.stringify({ model: 'bench/fast', input: prompt, max_output_tokens: 64 }),
    },
    embeddings: {
      url: `${proxyUrl}/api/v1/embeddings`,
      headers: auth,
      body: JSON.stringify({ model: 'bench/embed', input: prompt }),
    },
  };
}

const r2 = (n: number) => Math.round(n * 100) / 100;
const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);

export interface DoorRow {
  p50: number;
  p99: number;
  errors: number;
  cpuUsPerRequest: number;
  proxyUsPerRequest: number;
  requests: number;
  rateErrors: number;
  /** Ratios to chat (1 = chat's own). */
  p50Ratio?: number;
  p99Ratio?: number;
  cpuRatio?: number;
}

/** Runs the phase; every door is checked to answer 200 first (a door that does not fails the run). */
export async function measureDoors(c: DoorsContext): Promise<Record<string, DoorRow>> {
  const reqs = doorRequests(c.proxyUrl, c.key);
  for (const [name, r] of Object.entries(reqs)) {
    const res = await fetch(r.url, { method: 'POST', headers: r.headers, body: r.body });
    if (res.status !== 200) throw new Error(`doors: ${name}: HTTP ${res.status} ${await res.text()}`);
  }
  const names = Object.keys(reqs);
  const samples: Record<string, number[]> = {};
  const errors: Record<string, number> = {};
  const cpu: Record<string, { total: number; proxy: number; requests: number; errors: number }> = {};
  for (let round = 0; round < c.rounds; round++) {
    // Rotated each round so no door always follows the same one.
    const order = names.map((_, i) => names[(i + round) % names.length] as string);
    for (const name of order) {
      await c.quiesce();
      const r = await c.load<{ samples: number[]; errors: number }>({
        kind: 'seq',
        count: c.seqCount,
        warmup: 100,
        ...reqs[name],
      });
      samples[name] = [...(samples[name] ?? []), ...r.samples];
      errors[name] = (errors[name] ?? 0) + r.errors;
      await c.quiesce();
      let rr = { requests: 0, errors: 0 };
      const used = await c.cpuOf(async () => {
        rr = await c.load({ kind: 'rate', rate: c.rate, seconds: c.seconds, sockets: 64, ...reqs[name] });
      });
      const prev = cpu[name] ?? { total: 0, proxy: 0, requests: 0, errors: 0 };
      cpu[name] = {
        total: prev.total + sum(used),
        proxy: prev.proxy + (used.proxy ?? 0),
        requests: prev.requests + rr.requests,
        errors: prev.errors + rr.errors,
      };
      c.log(
        `doors round ${round + 1} ${name}: seq p50 ${r2(c.pct(r.samples, 50))} ms, cpu ${Math.round((sum(used) * 1000) / Math.max(1, rr.requests))} µs/req`,
      );
    }
  }
  const rows: Record<string, DoorRow> = {};
  for (const name of names) {
    const k = cpu[name] ?? { total: 0, proxy: 0, requests: 0, errors: 0 };
    rows[name] = {
      p50: r2(c.pct(samples[name] ?? [], 50)),
      p99: r2(c.pct(samples[name] ?? [], 99)),
      errors: errors[name] ?? 0,
      cpuUsPerRequest: Math.round((k.total * 1000) / Math.max(1, k.requests)),
      proxyUsPerRequest: Math.round((k.proxy * 1000) / Math.max(1, k.requests)),
      requests: k.requests,
      rateErrors: k.errors,
    };
  }
  const chat = rows.chat as DoorRow;
  for (const row of Object.values(rows)) {
    row.p50Ratio = r2(row.p50 / Math.max(1e-9, chat.p50));
    row.p99Ratio = r2(row.p99 / Math.max(1e-9, chat.p99));
    row.cpuRatio = r2(row.cpuUsPerRequest / Math.max(1, chat.cpuUsPerRequest));
  }
  return rows;
}
