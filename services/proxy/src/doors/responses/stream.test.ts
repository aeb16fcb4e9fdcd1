import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseResponsesRequest } from './request';
import { type ResponseContext, responseOfCompletion, responsesUsage } from './response';
import { ResponsesEvents } from './stream';

/**
 * The events and answers of the Responses door, read by the real openai SDK (its ResponseStream
 * checks output indexes, item identities and that every item is done before response.completed).
 */

type Json = Record<string, unknown>;

const TOKENS = { prompt: 12, completion: 7, cached: 2, cacheWrite: 0, reasoning: 3 };

function ctxOf(body: Json): ResponseContext {
  const r = parseResponsesRequest(body);
  return { id: 'gen-test-1', model: 'sim/gpt-tiny', createdAt: 1_700_000_000, echo: r.echo, names: r.names };
}

const chunk = (delta: Json, finish: string | null = null): Json => ({
  id: 'x',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

/** What the test server answers next: the SSE text or the JSON body. */
let next: { sse?: string; json?: Json } = {};
let server: Server;
let client: OpenAI;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (next.sse !== undefined) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(next.sse);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(next.json));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  client = new OpenAI({
    apiKey: 'k',
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    maxRetries: 0,
  });
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function streamOf(ctx: ResponseContext, chunks: Json[]): string {
  const ev = new ResponsesEvents(ctx);
  let sse = ev.start();
  for (const c of chunks) sse += ev.chunk(c);
  return sse + ev.end(responsesUsage(TOKENS, 1_500n), 'sim');
}

describe('Responses stream events through the openai SDK', () => {
  it('streams reasoning and text that ResponseStream accumulates into finalResponse()', async () => {
    const body = { model: 'sim/gpt-tiny', input: 'Hi', reasoning: { summary: 'auto' } };
    next = {
      sse: streamOf(ctxOf(body), [
        chunk({ role: 'assistant', content: '' }),
        chunk({ reasoning: 'Think' }),
        chunk({ reasoning: 'ing.' }),
        chunk({ content: 'Hello' }),
        chunk({ content: ', world' }, 'stop'),
      ]),
    };
    const stream = client.responses.stream(body as never);
    const types: string[] = [];
    const seqs: number[] = [];
    let text = '';
    for await (const e of stream) {
      types.push(e.type);
      seqs.push(e.sequence_number);
      if (e.type === 'response.output_text.delta') text += e.delta;
    }
    const final = await stream.finalResponse();
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(seqs).toEqual(seqs.map((_, i) => i));
    expect(text).toBe('Hello, world');
    expect(final.output_text).toBe('Hello, world');
    expect(final.status).toBe('completed');
    expect(final.output.map((o) => o.type)).toEqual(['reasoning', 'message']);
    expect(final.output[0]).toMatchObject({ summary: [{ type: 'summary_text', text: 'Thinking.' }] });
    expect(final.usage).toMatchObject({
      input_tokens: 12,
      output_tokens: 7,
      total_tokens: 19,
      input_tokens_details: { cached_tokens: 2 },
      output_tokens_details: { reasoning_tokens: 3 },
      cost: 1.5e-7,
    });
  });

  it('streams function calls (namespaced ones apart again) with their argument deltas', async () => {
    const body = {
      model: 'sim/gpt-tiny',
      input: 'Go',
      tools: [
        { type: 'function', name: 'exec_command', parameters: { type: 'object' } },
        { type: 'namespace', name: 'agents', tools: [{ type: 'function', name: 'spawn' }] },
      ],
    };
    next = {
      sse: streamOf(ctxOf(body), [
        chunk({ content: 'Running.' }),
        chunk({
          tool_calls: [
            { index: 0, id: 'call_a', type: 'function', function: { name: 'exec_command', arguments: '' } },
          ],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"cmd":' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"ls"}' } }] }),
        chunk({
          tool_calls: [{ index: 1, id: 'call_b', function: { name: 'agents__spawn', arguments: '{}' } }],
        }),
        chunk({}, 'tool_calls'),
      ]),
    };
    const stream = client.responses.stream(body as never);
    const argDeltas: string[] = [];
    stream.on('response.function_call_arguments.delta', (e) => argDeltas.push(e.delta));
    const final = await stream.finalResponse();
    expect(argDeltas).toEqual(['{"cmd":', '"ls"}', '{}']);
    expect(final.output_text).toBe('Running.');
    expect(final.output.slice(1)).toEqual([
      expect.objectContaining({
        type: 'function_call',
        call_id: 'call_a',
        name: 'exec_command',
        arguments: '{"cmd":"ls"}',
      }),
      expect.objectContaining({
        type: 'function_call',
        call_id: 'call_b',
        name: 'spawn',
        namespace: 'agents',
        arguments: '{}',
      }),
    ]);
  });

  it('ends a length-cut answer with response.incomplete (max_output_tokens)', async () => {
    const body = { model: 'sim/gpt-tiny', input: 'Hi', max_output_tokens: 2 };
    next = { sse: streamOf(ctxOf(body), [chunk({ content: 'Hel' }, 'length')]) };
    const stream = client.responses.stream(body as never);
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    expect(types.at(-1)).toBe('response.incomplete');
  });

  it('fails with response.failed carrying the error', () => {
    const ev = new ResponsesEvents(ctxOf({ model: 'm', input: 'x' }));
    ev.start();
    ev.chunk(chunk({ content: 'partial' }));
    const out = ev.fail({ code: 'provider_error', message: 'boom' }, null);
    const data = JSON.parse(out.split('\ndata: ')[1] as string) as Json;
    expect(data).toMatchObject({
      type: 'response.failed',
      response: { status: 'failed', error: { code: 'provider_error', message: 'boom' } },
    });
    expect(ev.end({}, 'sim')).toBe('');
  });
});

describe('Responses JSON answers through the openai SDK', () => {
  it('answers a chat.completion as a Response with output_text, calls and usage with cost', async () => {
    const body = { model: 'sim/gpt-tiny', input: 'Hi', tools: [{ type: 'function', name: 'f' }] };
    next = {
      json: responseOfCompletion(
        ctxOf(body),
        {
          choices: [
            {
              index: 0,
              finish_reason: 'tool_calls',
              message: {
                role: 'assistant',
                content: 'Calling f.',
                tool_calls: [
                  { id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
                ],
              },
            },
          ],
        },
        TOKENS,
        25_000n,
        'sim',
      ),
    };
    const r = await client.responses.create(body as never);
    expect(r.output_text).toBe('Calling f.');
    expect(r.id).toBe('gen-test-1');
    expect(r.output[1]).toMatchObject({
      type: 'function_call',
      call_id: 'call_1',
      name: 'f',
      arguments: '{"a":1}',
    });
    expect(r.usage).toMatchObject({ input_tokens: 12, output_tokens: 7, cost: 0.0000025 });
    expect(r.status).toBe('completed');
  });

  it('answers finish_reason length as incomplete with max_output_tokens', () => {
    const r = responseOfCompletion(
      ctxOf({ model: 'm', input: 'x' }),
      { choices: [{ finish_reason: 'length', message: { content: 'abc' } }] },
      TOKENS,
      0n,
      'sim',
    );
    expect(r).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      output_text: 'abc',
    });
  });
});
