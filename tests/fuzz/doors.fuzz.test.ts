/**
 * Adversarial and generated bodies for the newer front doors (/messages, /messages/count_tokens,
 * /responses, /embeddings) through the whole stack (tests/support/stack.ts). Every answer must be a
 * 4xx (or a 2xx) in the door's own error envelope, never a 5xx, a transport error or a hang, and the
 * stack must keep serving afterwards.
 *
 *   FUZZ_SEED=123 pnpm exec vitest run tests/fuzz/doors.fuzz.test.ts
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL, type Stack, startStack } from '../support/stack';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Date.now() ^ (Math.random() * 2 ** 31);
const RUNS = Number(process.env.FUZZ_DOOR_RUNS ?? 300);
const TIMEOUT_MS = 20_000;
const CLAUDE = 'anthropic/claude-sonnet-4.5';
const EMBED = 'openai/text-embedding-3-small';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ credits: '1000' });
}, 60_000);
afterAll(async () => {
  await stack?.close();
});

type Door = '/messages' | '/messages/count_tokens' | '/responses' | '/embeddings';
const DOORS: Door[] = ['/messages', '/messages/count_tokens', '/responses', '/embeddings'];

interface Answer {
  status: number;
  text: string;
}

async function send(door: Door, raw: string, prefix = '/api/v1'): Promise<Answer> {
  const res = await fetch(`${stack.origin}${prefix}${door}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.inferenceKey}`, 'content-type': 'application/json' },
    body: raw,
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  const text = await res.text();
  return { status: res.status, text };
}

/** null when the answer is acceptable. */
function violation(door: Door, a: Answer): string | null {
  if (a.status >= 500) return `HTTP ${a.status}: ${a.text.slice(0, 300)}`;
  if (a.status < 400) return null;
  let body: unknown;
  try {
    body = JSON.parse(a.text);
  } catch {
    return `HTTP ${a.status} not JSON: ${a.text.slice(0, 200)}`;
  }
  const b = body as Record<string, unknown>;
  if (door.startsWith('/messages')) {
    const e = b.error as Record<string, unknown> | undefined;
    if (b.type !== 'error' || typeof e?.type !== 'string' || typeof e?.message !== 'string')
      return `HTTP ${a.status} not an Anthropic error: ${a.text.slice(0, 200)}`;
    return null;
  }
  const e = b.error as Record<string, unknown> | undefined;
  if (typeof e?.message !== 'string')
    return `HTTP ${a.status} not an error envelope: ${a.text.slice(0, 200)}`;
  return null;
}

// ---------------------------------------------------------------------------------------------
// Hand-written shapes: wrong types at every field the doors read.

const junk: unknown[] = [null, true, 0, -1, 1.5, 1e308, 'x', '', [], {}, [null], [{}], [1, 2], { a: 1 }];
const messagesBase = { model: CLAUDE, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };
const responsesBase = { model: MODEL, input: 'hi', max_output_tokens: 16 };
const embeddingsBase = { model: EMBED, input: 'hi' };
const countBase = { model: CLAUDE, messages: [{ role: 'user', content: 'hi' }] };

function mutations(base: Record<string, unknown>, extraFields: string[]): unknown[] {
  const out: unknown[] = [];
  for (const field of [...Object.keys(base), ...extraFields])
    for (const v of junk) out.push({ ...base, [field]: v });
  return out;
}

const messageFields = [
  'system',
  'tools',
  'tool_choice',
  'thinking',
  'stop_sequences',
  'temperature',
  'top_p',
  'top_k',
  'metadata',
  'stream',
];
const messageContent: unknown[] = [
  [{ role: 'user', content: [{ type: 'text' }] }],
  [{ role: 'user', content: [{ type: 'image' }] }],
  [{ role: 'user', content: [{ type: 'image', source: null }] }],
  [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', data: 1 } }] }],
  [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 5 } }] }],
  [{ role: 'user', content: [{ type: 'document', source: { type: 'text', data: null } }] }],
  [{ role: 'user', content: [{ type: 'tool_result' }] }],
  [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: [{ type: 'image' }] }] }],
  [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: 5 }] }],
  [{ role: 'assistant', content: [{ type: 'tool_use' }] }],
  [{ role: 'assistant', content: [{ type: 'tool_use', id: 1, name: null, input: 'x' }] }],
  [{ role: 'assistant', content: [{ type: 'thinking' }] }],
  [{ role: 'assistant', content: [{ type: 'redacted_thinking', data: 3 }] }],
  [{ role: 'user', content: [null] }],
  [{ role: 'user', content: [[]] }],
  [{ role: 'user', content: [{ type: 'text', text: 'x', cache_control: 'x' }] }],
  [{ role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral', ttl: 5 } }] }],
  [{ role: 'system', content: 'x' }],
  [{ role: 'user' }],
  [{ content: 'x' }],
  [null],
];
const messageShapes = [
  ...mutations(messagesBase, messageFields),
  ...messageContent.map((messages) => ({ ...messagesBase, messages })),
  ...messageContent.map((messages) => ({ ...messagesBase, messages, stream: true })),
  { ...messagesBase, system: [{ type: 'text' }] },
  { ...messagesBase, system: [null] },
  { ...messagesBase, tools: [{}] },
  { ...messagesBase, tools: [{ name: 'x', input_schema: 5 }] },
  { ...messagesBase, tools: [{ type: 'web_search_20250305' }] },
  { ...messagesBase, tool_choice: { type: 'tool' } },
  { ...messagesBase, tool_choice: { type: 'nope' } },
  { ...messagesBase, thinking: { type: 'enabled' } },
  { ...messagesBase, thinking: { type: 'enabled', budget_tokens: -1 } },
  { ...messagesBase, thinking: { type: 'enabled', budget_tokens: 1e12 } },
  { ...messagesBase, thinking: { type: 'enabled', budget_tokens: 'x' } },
  { ...messagesBase, max_tokens: 1e12 },
  { ...messagesBase, max_tokens: 2 ** 53 + 2 },
];
const responsesFields = [
  'instructions',
  'tools',
  'tool_choice',
  'reasoning',
  'text',
  'previous_response_id',
  'store',
  'stream',
  'include',
  'metadata',
  'truncation',
  'parallel_tool_calls',
];
const responsesInputs: unknown[] = [
  [{ type: 'message' }],
  [{ type: 'message', role: 'user' }],
  [{ type: 'message', role: 'user', content: 5 }],
  [{ type: 'message', role: 'user', content: [{ type: 'input_text' }] }],
  [{ type: 'message', role: 'user', content: [{ type: 'input_image' }] }],
  [{ type: 'message', role: 'user', content: [{ type: 'input_image', image_url: 5 }] }],
  [{ type: 'message', role: 'user', content: [{ type: 'input_file' }] }],
  [{ type: 'message', role: 'user', content: [null] }],
  [{ type: 'function_call' }],
  [{ type: 'function_call', call_id: 1, name: null, arguments: {} }],
  [{ type: 'function_call_output' }],
  [{ type: 'function_call_output', call_id: 'x', output: null }],
  [{ type: 'function_call_output', call_id: 'x', output: [{ type: 'input_image' }] }],
  [{ type: 'reasoning' }],
  [{ type: 'reasoning', summary: 5 }],
  [{ type: 'item_reference', id: 'x' }],
  [{ type: 'nope' }],
  [{ role: 'user', content: 'x' }],
  [{ role: 'developer', content: [{ type: 'output_text' }] }],
  [{ role: 'assistant', content: [{ type: 'refusal' }] }],
  [null],
  [[]],
];
const responsesShapes = [
  ...mutations(responsesBase, responsesFields),
  ...responsesInputs.map((input) => ({ ...responsesBase, input })),
  ...responsesInputs.map((input) => ({ ...responsesBase, input, stream: true })),
  { ...responsesBase, tools: [{}] },
  { ...responsesBase, tools: [{ type: 'function' }] },
  { ...responsesBase, tools: [{ type: 'function', name: 'x', parameters: 5 }] },
  { ...responsesBase, tools: [{ type: 'web_search' }] },
  { ...responsesBase, tool_choice: { type: 'function' } },
  { ...responsesBase, reasoning: { effort: 'x' } },
  { ...responsesBase, reasoning: { effort: 'high', summary: 5 } },
  { ...responsesBase, text: { format: { type: 'json_schema' } } },
  { ...responsesBase, text: { format: { type: 'json_schema', schema: 5, name: 1 } } },
  { ...responsesBase, max_output_tokens: 1e12 },
];
const embeddingsShapes = [
  ...mutations(embeddingsBase, ['dimensions', 'encoding_format', 'user']),
  { ...embeddingsBase, input: [[1, 2], 'x'] },
  { ...embeddingsBase, input: [[-1]] },
  { ...embeddingsBase, input: [[1e12]] },
  { ...embeddingsBase, input: [[1.5]] },
  { ...embeddingsBase, input: [[]] },
  { ...embeddingsBase, input: [''] },
  { ...embeddingsBase, input: Array.from({ length: 5000 }, () => 'x') },
  { ...embeddingsBase, input: [Array.from({ length: 50_000 }, () => 1)] },
  { ...embeddingsBase, model: CLAUDE },
  { ...embeddingsBase, model: MODEL },
  { ...embeddingsBase, dimensions: -5 },
  { ...embeddingsBase, dimensions: 1e9 },
];
const countShapes = [
  ...mutations(countBase, ['system', 'tools', 'thinking']),
  ...messageContent.map((messages) => ({ ...countBase, messages })),
];

const rawBodies = [
  '',
  'null',
  '[]',
  '"x"',
  '1',
  '{',
  '{"model":',
  '\u0000',
  '{"model":"\ud800"}',
  'x'.repeat(1000),
];

describe('front doors: malformed bodies never make a 5xx', () => {
  const cases: Array<[Door, unknown[]]> = [
    ['/messages', messageShapes],
    ['/responses', responsesShapes],
    ['/embeddings', embeddingsShapes],
    ['/messages/count_tokens', countShapes],
  ];
  it.each(cases)(
    '%s: hand-written shapes',
    async (door, shapes) => {
      const failures: string[] = [];
      const bodies = [...rawBodies, ...shapes.map((s) => JSON.stringify(s))];
      for (let i = 0; i < bodies.length; i += 20) {
        const batch = bodies.slice(i, i + 20);
        const answers = await Promise.all(
          batch.map((raw) =>
            send(door, raw).then(
              (a) => violation(door, a),
              (err: Error) => `transport error: ${err.message}`,
            ),
          ),
        );
        answers.forEach((problem, j) => {
          if (problem) failures.push(`${problem}\n  body: ${batch[j]!.slice(0, 300)}`);
        });
      }
      expect(failures).toEqual([]);
    },
    240_000,
  );

  it(`generated bodies (seed ${SEED})`, async () => {
    const value: fc.Arbitrary<unknown> = fc.oneof(
      fc.jsonValue({ maxDepth: 4 }),
      fc.constantFrom(...junk),
      fc.string({ unit: 'binary', maxLength: 30 }),
    );
    const body = fc.oneof(
      fc
        .record({
          base: fc.constantFrom(messagesBase, responsesBase, embeddingsBase, countBase),
          extra: fc.dictionary(
            fc.constantFrom(
              ...messageFields,
              ...responsesFields,
              'input',
              'messages',
              'model',
              'max_tokens',
              'max_output_tokens',
              'dimensions',
            ),
            value,
          ),
        })
        .map(({ base, extra }) => ({ ...base, ...extra })),
      value,
    );
    const failures: string[] = [];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...DOORS), body, async (door, b) => {
        const raw = JSON.stringify(b) ?? 'null';
        const problem = await send(door, raw).then(
          (a) => violation(door, a),
          (err: Error) => `transport error: ${err.message}`,
        );
        if (problem) failures.push(`${door}: ${problem}\n  body: ${raw.slice(0, 300)}`);
        return problem === null;
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    expect(failures).toEqual([]);
  }, 240_000);

  it('refuses Anthropic server tools billed per call, on the native path too (never reaches the provider)', async () => {
    for (const stream of [false, true]) {
      const a = await send(
        '/messages',
        JSON.stringify({
          ...messagesBase,
          stream,
          tools: [{ type: 'web_search_20250305', name: 'web_search' }],
        }),
      );
      expect(a.status, a.text).toBe(400);
      expect(JSON.parse(a.text).error.type).toBe('invalid_request_error');
      expect(a.text).toContain('tools.0.type');
    }
  }, 30_000);

  it('still serves afterwards', async () => {
    const ok = await send('/messages', JSON.stringify(messagesBase));
    expect(ok.status, ok.text).toBe(200);
  }, 30_000);
});
