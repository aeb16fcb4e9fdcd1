import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { describe, expect, it } from 'vitest';
import { azure } from './azure';
import { bedrock } from './bedrock';
import { buildConverseRequest } from './bedrock/request';
import { ConverseStreamBridge } from './bedrock/stream';
import { gemini } from './gemini';
import { buildGenerateContentRequest } from './gemini/request';
import { readGenerateContent } from './gemini/response';
import { GeminiSseBridge } from './gemini/stream';

type Json = Record<string, any>;
const ctx = { model: 'vendor/m', created: 1 };
const PIXEL = 'data:image/png;base64,AAAA';

describe('Gemini request', () => {
  it('translates system, images, tool calls and results, tools, tool_choice, thinking and limits', () => {
    const body = buildGenerateContentRequest({
      model: 'x',
      max_tokens: 50,
      temperature: 1.5,
      reasoning_effort: 'low',
      stop: ['END'],
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look' },
            { type: 'image_url', image_url: { url: PIXEL } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get', arguments: '{"a":1}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'done' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get',
            parameters: { type: 'object', additionalProperties: false, properties: {} },
          },
        },
      ],
      tool_choice: { type: 'function', function: { name: 'get' } },
    }) as Json;
    expect(body.systemInstruction).toEqual({ parts: [{ text: 'Be brief.' }] });
    const url = buildGenerateContentRequest({
      messages: [
        { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/a.webp?v=1' } }] },
      ],
    }) as Json;
    expect(url.contents[0].parts[0]).toEqual({
      fileData: { mimeType: 'image/webp', fileUri: 'https://x/a.webp?v=1' },
    });
    expect(body.contents[0].parts[1]).toEqual({ inlineData: { mimeType: 'image/png', data: 'AAAA' } });
    expect(body.contents[1]).toEqual({
      role: 'model',
      parts: [{ functionCall: { name: 'get', args: { a: 1 } } }],
    });
    expect(body.contents[2].parts[0]).toEqual({
      functionResponse: { name: 'get', response: { content: 'done' } },
    });
    expect(body.tools[0].functionDeclarations[0].parameters).toEqual({ type: 'object', properties: {} });
    expect(body.toolConfig).toEqual({
      functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get'] },
    });
    expect(body.generationConfig).toMatchObject({
      maxOutputTokens: 50,
      temperature: 1.5,
      stopSequences: ['END'],
      thinkingConfig: { thinkingBudget: 1024 },
    });
  });

  it('builds the model URL per attempt, streamed with alt=sse, the key in x-goog-api-key', async () => {
    const base = { path: '/v1beta', headers: gemini.headers('k') };
    const input = { provider: {} as never, apiKey: 'k', upstreamModel: 'gemini-2.5-flash', body: '{}', base };
    expect(await gemini.attempt?.({ ...input, stream: true })).toEqual({
      path: '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
      headers: expect.objectContaining({ 'x-goog-api-key': 'k' }),
    });
  });
});

describe('Gemini answers', () => {
  it('prices cached and thinking tokens, and maps a prompt blocked for safety to content_filter', () => {
    const r = readGenerateContent(
      {
        candidates: [{ content: { parts: [{ text: 'hi', thought: false }] }, finishReason: 'STOP' }],
        usageMetadata: {
          promptTokenCount: 10,
          candidatesTokenCount: 3,
          thoughtsTokenCount: 4,
          cachedContentTokenCount: 6,
        },
      },
      ctx,
    ) as Json;
    expect(r.usage).toMatchObject({
      prompt_tokens: 10,
      completion_tokens: 7,
      prompt_tokens_details: { cached_tokens: 6 },
      completion_tokens_details: { reasoning_tokens: 4 },
    });
    const blocked = readGenerateContent(
      { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 5 } },
      ctx,
    ) as Json;
    expect(blocked.choices[0].finish_reason).toBe('content_filter');
    expect(blocked.usage.prompt_tokens).toBe(5);
  });

  it('streams chunks, a finish, the usage chunk and [DONE] only after a finish', () => {
    const bridge = new GeminiSseBridge('m', 1);
    const ev = (o: Json) => new TextEncoder().encode(`data: ${JSON.stringify(o)}\r\n\r\n`);
    let out = bridge.push(ev({ responseId: 'r1', candidates: [{ content: { parts: [{ text: 'a' }] } }] }));
    out += bridge.push(
      ev({
        candidates: [{ content: { parts: [{ text: 'b' }] }, finishReason: 'MAX_TOKENS' }],
        usageMetadata: { promptTokenCount: 2, candidatesTokenCount: 2 },
      }),
    );
    out += bridge.end();
    const data = out
      .split('\n\n')
      .filter(Boolean)
      .map((l) => l.slice(6));
    expect(data.at(-1)).toBe('[DONE]');
    expect(JSON.parse(data.at(-2) as string).usage.prompt_tokens).toBe(2);
    expect(out).toContain('"finish_reason":"length"');
    const cut = new GeminiSseBridge('m', 1);
    cut.push(ev({ candidates: [{ content: { parts: [{ text: 'a' }] } }] }));
    expect(cut.end()).not.toContain('[DONE]');
  });

  it('reads a wrong key (400 API_KEY_INVALID) as credentials, FAILED_PRECONDITION as unavailable, a bad request as the caller', () => {
    const err = (status: string, reason?: string) =>
      JSON.stringify({ error: { code: 400, message: 'x', status, details: reason ? [{ reason }] : [] } });
    const badKey = gemini.classifyHttpError(400, err('INVALID_ARGUMENT', 'API_KEY_INVALID'), 'g');
    expect([badKey.failure, badKey.summary.status]).toEqual(['credentials', 502]);
    expect(gemini.classifyHttpError(400, err('FAILED_PRECONDITION'), 'g').failure).toBe('unavailable');
    expect(gemini.classifyHttpError(400, err('INVALID_ARGUMENT'), 'g').failure).toBe('caller');
    expect(gemini.classifyHttpError(429, err('RESOURCE_EXHAUSTED'), 'g').failure).toBe('rate_limited');
  });
});

describe('Azure OpenAI', () => {
  it('sends to the deployment with api-version, api-key or a bearer token', async () => {
    const base = { path: '', headers: azure.headers('k') };
    const provider = { apiVersion: '2024-10-21', auth: 'api-key' } as never;
    const r = await azure.attempt?.({
      provider,
      apiKey: 'k',
      upstreamModel: 'dep 1',
      stream: false,
      body: '',
      base,
    });
    expect(r?.path).toBe('/openai/deployments/dep%201/chat/completions?api-version=2024-10-21');
    expect(r?.headers['api-key']).toBe('k');
    const bearer = { apiVersion: '2024-10-21', auth: 'bearer' } as never;
    const b = await azure.attempt?.({
      provider: bearer,
      apiKey: 't',
      upstreamModel: 'd',
      stream: false,
      body: '',
      base,
    });
    expect(b?.headers.authorization).toBe('Bearer t');
    expect(b?.headers['api-key']).toBeUndefined();
    expect(azure.classifyHttpError(404, '{"error":{"code":"DeploymentNotFound"}}', 'a').failure).toBe(
      'unavailable',
    );
  });
});

describe('Bedrock', () => {
  it('translates to Converse; an image URL is a 400 (Converse takes bytes)', () => {
    const body = buildConverseRequest({
      messages: [
        { role: 'system', content: 'S' },
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: PIXEL } },
            { type: 'text', text: 'Q' },
          ],
        },
      ],
      max_tokens: 9,
      tools: [{ type: 'function', function: { name: 't', parameters: { type: 'object' } } }],
      tool_choice: 'required',
    }) as Json;
    expect(body.system).toEqual([{ text: 'S' }]);
    expect(body.messages[0].content[0]).toEqual({ image: { format: 'png', source: { bytes: 'AAAA' } } });
    expect(body.inferenceConfig).toEqual({ maxTokens: 9 });
    expect(body.toolConfig.toolChoice).toEqual({ any: {} });
    expect(() =>
      buildConverseRequest({
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }],
      }),
    ).toThrow(/base64/);
  });

  it('reads throttling (429, and a 400 quota exception) as rate limited, a validation error as the caller', () => {
    expect(bedrock.classifyHttpError(429, '{"message":"Rate exceeded"}', 'b').failure).toBe('rate_limited');
    const quota = bedrock.classifyHttpError(
      400,
      '{"message":"Too many tokens, please wait before trying again."}',
      'b',
    );
    expect(quota.failure).toBe('rate_limited');
    expect(bedrock.classifyHttpError(400, '{"message":"Malformed input request"}', 'b').failure).toBe(
      'caller',
    );
    expect(bedrock.classifyHttpError(424, '{"message":"Model error"}', 'b').failure).toBe('unavailable');
  });

  it('decodes event-stream frames split anywhere; a frame failing its CRC is an error', () => {
    const codec = new EventStreamCodec(toUtf8, fromUtf8);
    const frame = (type: string, body: Json) =>
      codec.encode({
        headers: {
          ':message-type': { type: 'string', value: 'event' },
          ':event-type': { type: 'string', value: type },
        },
        body: fromUtf8(JSON.stringify(body)),
      });
    const all = Buffer.concat([
      frame('messageStart', { role: 'assistant' }),
      frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'hé' } }),
      frame('messageStop', { stopReason: 'max_tokens' }),
      frame('metadata', {
        usage: { inputTokens: 3, outputTokens: 2, cacheReadInputTokens: 1, cacheWriteInputTokens: 0 },
      }),
    ]);
    const bridge = new ConverseStreamBridge('m', 1);
    let out = '';
    for (let i = 0; i < all.length; i += 7) out += bridge.push(all.subarray(i, i + 7));
    expect(out).toContain('"content":"hé"');
    expect(out).toContain('"finish_reason":"length"');
    expect(out).toContain('"prompt_tokens":4');
    expect(out.endsWith('data: [DONE]\n\n')).toBe(true);
    const broken = Buffer.from(frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'x' } }));
    broken[broken.length - 6] = (broken[broken.length - 6] as number) ^ 0xff;
    expect(new ConverseStreamBridge('m', 1).push(broken)).toContain('"error"');
  });
});
