/**
 * The doors phase of bench/compare.ts (issue 30: "the Messages and Responses front doors and
 * embeddings … measured the same way and within 10 % of chat completions"). Every door goes through
 * the same single-process Tollgate proxy to the same upstream (bench/compare/upstream.ts, which
 * answers chat completions, Anthropic's Messages and OpenAI's Responses, JSON and streamed, with the
 * same content, and embeddings), non-streamed and streamed:
 *
 *   chat                      /chat/completions → an OpenAI-format provider (the byte relay)
 *   messages (translated)     /messages → the OpenAI-format provider (Anthropic ⇄ chat translation)
 *   messages (native)         /messages → an Anthropic-format provider (bytes passed through)
 *   responses (translated)    /responses → the OpenAI-format provider's chat completions
 *   responses (native)        /responses → a provider serving the Responses API (`responses: true`)
 *   embeddings                /embeddings (not streamed)
 *
 * Each streamed door is compared with streamed chat, each JSON door with JSON chat, on:
 * - latency: the `mix` job of load.ts — one keep-alive connection per door, one request of each door
 *   in turn, the order rotated every round — so every door sees the same moments of the shared
 *   machine (a load spike hits all of them, not one door's block); to the end and to the first byte;
 * - CPU µs per request at a fixed rate (the `rate` job, the cpu phase's /proc snapshots of every
 *   process of the stack; the proxy's own column too), door slices alternating round by round;
 * - open-loop latency at that rate (first byte for streams, the end for JSON): the `ratemix` job —
 *   the same rate in all, the doors' requests in turn — so every door sees the same moments of the
 *   machine. The slices' own latency (`sliceP50`, `sliceP99`) is kept: each slice is a different few
 *   seconds of a shared machine, and on the quiet session-11 run their p50 differed by 0.86–1.13×
 *   between JSON doors whose proxy CPU was within 0.94–1.01× (issue 30, bench/README.md).
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
  /** Requests per door per round of the latency mix. */
  seqCount: number;
  rate: number;
  /** Seconds of each door's fixed-rate slice per round. */
  seconds: number;
  load: <T>(job: Record<string, unknown>) => Promise<T>;
  quiesce: () => Promise<void>;
  /** CPU ms per process group used while `run` runs (the chat phase's snapshots). */
  cpuOf: (run: () => Promise<void>) => Promise<Record<string, number>>;
  pct: (xs: number[], p: number) => number;
  log: (s: string) => void;
  /** Only these doors (names as below; the baselines are always kept). */
  only?: string[];
  /**
   * Diagnostic A/B (BENCH_PROXY_B): a second proxy; every door is measured through it too, as
   * `<door> (b)` (compared with `chat (b)` / `chat (stream) (b)`), in the same mix and rounds.
   */
  proxyB?: { url: string; cpuOf: (run: () => Promise<void>) => Promise<Record<string, number>> };
}

interface Door extends DoorRequest {
  /** What the door is compared with: `chat` or `chat (stream)`. */
  baseline: string;
  stream: boolean;
  /** What the end of a streamed answer contains (checked before measuring). */
  end?: string;
}

const prompt = 'Hello! Summarise what a model gateway does in two sentences.';

/** Every door measured, with its request (the chat phase's prompt and size). */
export function doorRequests(proxyUrl: string, key: string): Record<string, Door> {
  const auth = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
  const anthropic = {
    'content-type': 'application/json',
    'x-api-key': key,
    'anthropic-version': '2023-06-01',
  };
  const chat = (stream: boolean): Door => ({
    url: `${proxyUrl}/api/v1/chat/completions`,
    headers: auth,
    body: JSON.stringify({
      model: 'bench/fast',
      messages: [{ role: 'user', content: prompt }],
      max_tokens: 64,
      ...(stream ? { stream } : {}),
    }),
    baseline: stream ? 'chat (stream)' : 'chat',
    stream,
    end: 'data: [DONE]',
  });
  const messages = (model: string, stream: boolean): Door => ({
    url: `${proxyUrl}/api/v1/messages`,
    headers: anthropic,
    body: JSON.stringify({
      model,
      max_tokens: 64,
      messages: [{ role: 'user', content: prompt }],
      ...(stream ? { stream } : {}),
    }),
    baseline: stream ? 'chat (stream)' : 'chat',
    stream,
    end: 'event: message_stop',
  });
  const responses = (model: string, stream: boolean): Door => ({
    url: `${proxyUrl}/api/v1/responses`,
    headers: auth,
    body: JSON.stringify({ model, input: prompt, max_output_tokens: 64, ...(stream ? { stream } : {}) }),
    baseline: stream ? 'chat (stream)' : 'chat',
    stream,
    end: 'event: response.completed',
  });
  return {
    chat: chat(false),
    'messages (translated)': messages('bench/fast', false),
    'messages (native)': messages('bench/claude', false),
    'responses (translated)': responses('bench/fast', false),
    'responses (native)': responses('bench/gpt', false),
    embeddings: {
      url: `${proxyUrl}/api/v1/embeddings`,
      headers: auth,
      body: JSON.stringify({ model: 'bench/embed', input: prompt }),
      baseline: 'chat',
      stream: false,
    },
    'chat (stream)': chat(true),
    'messages (translated, stream)': messages('bench/fast', true),
    'messages (native, stream)': messages('bench/claude', true),
    'responses (translated, stream)': responses('bench/fast', true),
    'responses (native, stream)': responses('bench/gpt', true),
  };
}

const r2 = (n: number) => Math.round(n * 100) / 100;
const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
const ratio = (a: number, b: number) => r2(a / Math.max(1e-9, b));

export interface DoorRow {
  baseline: string;
  stream: boolean;
  /** Latency of the interleaved sequential mix, ms: to the end, and to the first body byte. */
  p50: number;
  p99: number;
  ttfbP50: number;
  ttfbP99: number;
  errors: number;
  /** Open loop at the fixed rate, doors in turn (`ratemix`), ms: the first byte (streams) or the end (JSON). */
  rateP50: number;
  rateP99: number;
  /** The same, of the door's own CPU slices (each alone at the rate, at its own moment). */
  sliceP50: number;
  sliceP99: number;
  /** CPU µs per request at the fixed rate: every process of the stack, and the proxy alone. */
  cpuUsPerRequest: number;
  proxyUsPerRequest: number;
  requests: number;
  rateErrors: number;
  /** Ratios to the baseline (1 = the baseline's own). */
  p50Ratio?: number;
  p99Ratio?: number;
  ttfbP50Ratio?: number;
  ttfbP99Ratio?: number;
  rateP50Ratio?: number;
  rateP99Ratio?: number;
  cpuRatio?: number;
  proxyCpuRatio?: number;
}

/** Runs the phase; every door is checked to answer 200 (streams: to their end event) first. */
export async function measureDoors(c: DoorsContext): Promise<Record<string, DoorRow>> {
  const picked = (all: Record<string, Door>) =>
    Object.entries(all).filter(
      ([name, d]) => !c.only || c.only.includes(name) || name === 'chat' || name === d.baseline,
    );
  const reqs = Object.fromEntries(picked(doorRequests(c.proxyUrl, c.key)));
  if (c.proxyB) {
    for (const [name, d] of picked(doorRequests(c.proxyB.url, c.key)))
      reqs[`${name} (b)`] = { ...d, baseline: `${d.baseline} (b)` };
  }
  for (const [name, r] of Object.entries(reqs)) {
    const res = await fetch(r.url, { method: 'POST', headers: r.headers, body: r.body });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`doors: ${name}: HTTP ${res.status} ${text}`);
    if (r.end && r.stream && !text.includes(r.end))
      throw new Error(`doors: ${name}: the stream did not end with ${r.end}: ${text.slice(-300)}`);
  }
  const names = Object.keys(reqs);
  const total: Record<string, number[]> = {};
  const ttfb: Record<string, number[]> = {};
  const errors: Record<string, number> = {};
  const atRate: Record<string, number[]> = {};
  const inSlice: Record<string, number[]> = {};
  const mixErrors: Record<string, number> = {};
  const cpu: Record<string, { total: number; proxy: number; requests: number; errors: number }> = {};
  const request = ({ url, headers, body }: Door) => ({ url, headers, body });
  for (let round = 0; round < c.rounds; round++) {
    await c.quiesce();
    const mix = await c.load<{
      total: number[][];
      ttfb: number[][];
      errors: number[];
      firstErrors: string[];
    }>({
      kind: 'mix',
      count: c.seqCount,
      warmup: round === 0 ? 100 : 20,
      requests: names.map((n) => request(reqs[n] as Door)),
    });
    names.forEach((name, i) => {
      total[name] = [...(total[name] ?? []), ...(mix.total[i] ?? [])];
      ttfb[name] = [...(ttfb[name] ?? []), ...(mix.ttfb[i] ?? [])];
      errors[name] = (errors[name] ?? 0) + (mix.errors[i] ?? 0);
    });
    c.log(
      `doors round ${round + 1} mix: ${names.map((n, i) => `${n} ${r2(c.pct(mix.total[i] ?? [], 50))}`).join(', ')} ms p50${mix.firstErrors.length ? `; errors ${mix.firstErrors.join('; ')}` : ''}`,
    );
    // The fixed-rate slices, forwards then backwards: no door always follows the same one.
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      const door = reqs[name] as Door;
      await c.quiesce();
      let rr = { requests: 0, errors: 0, ttfb: [] as number[], total: [] as number[] };
      const cpuOf = name.endsWith(' (b)') && c.proxyB ? c.proxyB.cpuOf : c.cpuOf;
      const used = await cpuOf(async () => {
        rr = await c.load({ kind: 'rate', rate: c.rate, seconds: c.seconds, sockets: 64, ...request(door) });
      });
      const prev = cpu[name] ?? { total: 0, proxy: 0, requests: 0, errors: 0 };
      cpu[name] = {
        total: prev.total + sum(used),
        proxy: prev.proxy + (used.proxy ?? 0),
        requests: prev.requests + rr.requests,
        errors: prev.errors + rr.errors,
      };
      const lat = door.stream ? rr.ttfb : rr.total;
      inSlice[name] = [...(inSlice[name] ?? []), ...lat];
      c.log(
        `doors round ${round + 1} @${c.rate} ${name}: p50 ${r2(c.pct(lat, 50))} p99 ${r2(c.pct(lat, 99))} ms, cpu ${Math.round((sum(used) * 1000) / Math.max(1, rr.requests))} µs/req (proxy ${Math.round(((used.proxy ?? 0) * 1000) / Math.max(1, rr.requests))})${rr.errors ? `, ${rr.errors} errors` : ''}`,
      );
    }
    // The open-loop latency: every door in turn at the same rate in all, as many requests each as a slice.
    await c.quiesce();
    const order = names.map((_, i) => names[(i + round) % names.length] as string);
    const mixed = await c.load<{ requests: number; errors: number; ttfb: number[]; total: number[] }[]>({
      kind: 'ratemix',
      rate: c.rate,
      seconds: c.seconds * order.length,
      sockets: 64,
      requests: order.map((n) => request(reqs[n] as Door)),
    });
    order.forEach((name, i) => {
      const r = mixed[i] ?? { requests: 0, errors: 0, ttfb: [], total: [] };
      atRate[name] = [...(atRate[name] ?? []), ...((reqs[name] as Door).stream ? r.ttfb : r.total)];
      mixErrors[name] = (mixErrors[name] ?? 0) + r.errors;
    });
    c.log(
      `doors round ${round + 1} @${c.rate} in turn: ${order.map((n, i) => `${n} ${r2(c.pct(((reqs[n] as Door).stream ? mixed[i]?.ttfb : mixed[i]?.total) ?? [], 50))}`).join(', ')} ms p50`,
    );
  }
  const rows: Record<string, DoorRow> = {};
  for (const name of names) {
    const door = reqs[name] as Door;
    const k = cpu[name] ?? { total: 0, proxy: 0, requests: 0, errors: 0 };
    rows[name] = {
      baseline: door.baseline,
      stream: door.stream,
      p50: r2(c.pct(total[name] ?? [], 50)),
      p99: r2(c.pct(total[name] ?? [], 99)),
      ttfbP50: r2(c.pct(ttfb[name] ?? [], 50)),
      ttfbP99: r2(c.pct(ttfb[name] ?? [], 99)),
      errors: errors[name] ?? 0,
      rateP50: r2(c.pct(atRate[name] ?? [], 50)),
      rateP99: r2(c.pct(atRate[name] ?? [], 99)),
      sliceP50: r2(c.pct(inSlice[name] ?? [], 50)),
      sliceP99: r2(c.pct(inSlice[name] ?? [], 99)),
      cpuUsPerRequest: Math.round((k.total * 1000) / Math.max(1, k.requests)),
      proxyUsPerRequest: Math.round((k.proxy * 1000) / Math.max(1, k.requests)),
      requests: k.requests,
      rateErrors: k.errors + (mixErrors[name] ?? 0),
    };
  }
  for (const row of Object.values(rows)) {
    const base = rows[row.baseline] as DoorRow;
    row.p50Ratio = ratio(row.p50, base.p50);
    row.p99Ratio = ratio(row.p99, base.p99);
    row.ttfbP50Ratio = ratio(row.ttfbP50, base.ttfbP50);
    row.ttfbP99Ratio = ratio(row.ttfbP99, base.ttfbP99);
    row.rateP50Ratio = ratio(row.rateP50, base.rateP50);
    row.rateP99Ratio = ratio(row.rateP99, base.rateP99);
    row.cpuRatio = ratio(row.cpuUsPerRequest, base.cpuUsPerRequest);
    row.proxyCpuRatio = ratio(row.proxyUsPerRequest, base.proxyUsPerRequest);
  }
  return rows;
}
