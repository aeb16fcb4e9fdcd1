import { Sha256 } from '@aws-crypto/sha256-js';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { SignatureV4 } from '@smithy/signature-v4';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProviderSim, startProviderSim } from '../http/app';
import { SIM_AWS_CREDENTIALS } from './sigv4';

/**
 * The cloud modes check what the real services check: a request with a wrong key header, a missing
 * api-version, or a SigV4 signature that does not cover the exact request is refused.
 */
let sim: ProviderSim;
beforeAll(async () => {
  sim = await startProviderSim({ apiKey: 'sim-key' });
});
afterAll(() => sim.close());

type Json = Record<string, any>;
const chat = { contents: [{ role: 'user', parts: [{ text: 'Hello' }] }] };

describe('Gemini', () => {
  const post = (headers: Record<string, string>, body: unknown = chat, method = 'generateContent') =>
    fetch(`${sim.url}/v1beta/models/gemini-2.5-flash:${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  it('answers with usageMetadata when x-goog-api-key is right', async () => {
    const r = await post({ 'x-goog-api-key': 'sim-key' });
    const body = (await r.json()) as Json;
    expect(r.status).toBe(200);
    expect(body.candidates[0].content.parts[0].text.length).toBeGreaterThan(0);
    expect(body.usageMetadata.promptTokenCount).toBeGreaterThan(0);
  });

  it('refuses a missing key (403), a wrong key (400 API_KEY_INVALID), a key in Authorization, unknown fields', async () => {
    expect((await post({})).status).toBe(403);
    const wrong = await post({ 'x-goog-api-key': 'nope' });
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as Json).error.details[0].reason).toBe('API_KEY_INVALID');
    expect((await post({ authorization: 'Bearer sim-key' })).status).toBe(403);
    const unknown = await post({ 'x-goog-api-key': 'sim-key' }, { ...chat, max_tokens: 5 });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as Json).error.message).toContain('Unknown name "max_tokens"');
  });

  it('batchEmbedContents checks each request names the URL model', async () => {
    const req = (model: string) => ({ requests: [{ model, content: { parts: [{ text: 'a' }] } }] });
    const ok = await post(
      { 'x-goog-api-key': 'sim-key' },
      req('models/gemini-2.5-flash'),
      'batchEmbedContents',
    );
    expect(((await ok.json()) as Json).embeddings[0].values).toHaveLength(768);
    const bad = await post({ 'x-goog-api-key': 'sim-key' }, req('models/other'), 'batchEmbedContents');
    expect(bad.status).toBe(400);
  });
});

describe('Azure OpenAI', () => {
  const post = (query: string, headers: Record<string, string>) =>
    fetch(`${sim.url}/openai/deployments/gpt-4o/chat/completions${query}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5 }),
    });

  it('answers with api-key or a bearer token and a known api-version', async () => {
    expect((await post('?api-version=2024-10-21', { 'api-key': 'sim-key' })).status).toBe(200);
    expect((await post('?api-version=2025-04-01-preview', { authorization: 'Bearer sim-key' })).status).toBe(
      200,
    );
  });

  it('refuses a missing or unknown api-version (404) and a wrong or missing key (401)', async () => {
    expect((await post('', { 'api-key': 'sim-key' })).status).toBe(404);
    expect((await post('?api-version=latest', { 'api-key': 'sim-key' })).status).toBe(404);
    expect((await post('?api-version=2024-10-21', { 'api-key': 'nope' })).status).toBe(401);
    expect((await post('?api-version=2024-10-21', {})).status).toBe(401);
  });
});

describe('Bedrock SigV4', () => {
  const url = () => new URL(sim.url);
  const converse = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'Hello' }] }] });

  async function signed(
    path: string,
    body: string,
    o: { secret?: string; region?: string; date?: Date } = {},
  ): Promise<Record<string, string>> {
    const signer = new SignatureV4({
      credentials: {
        accessKeyId: SIM_AWS_CREDENTIALS.accessKeyId,
        secretAccessKey: o.secret ?? SIM_AWS_CREDENTIALS.secretAccessKey,
      },
      region: o.region ?? 'us-east-1',
      service: 'bedrock',
      sha256: Sha256,
    });
    const req = await signer.sign(
      {
        method: 'POST',
        protocol: 'http:',
        hostname: url().hostname,
        port: Number(url().port),
        path,
        query: {},
        headers: { host: url().host, 'content-type': 'application/json' },
        body,
      },
      o.date ? { signingDate: o.date } : {},
    );
    return req.headers;
  }
  const send = (path: string, headers: Record<string, string>, body: string) =>
    fetch(`${sim.url}${path}`, { method: 'POST', headers, body });
  const PATH = `/model/${encodeURIComponent('anthropic.claude-3-5-haiku-20241022-v1:0')}/converse`;

  it('answers a request signed with the right credentials over its exact body', async () => {
    const r = await send(PATH, await signed(PATH, converse), converse);
    const body = (await r.json()) as Json;
    expect(r.status, JSON.stringify(body)).toBe(200);
    expect(body.output.message.content[0].text.length).toBeGreaterThan(0);
    expect(body.usage.inputTokens).toBeGreaterThan(0);
  });

  it('refuses a body changed after signing, a wrong secret, another region, an old date, no signature', async () => {
    const headers = await signed(PATH, converse);
    const tampered = converse.replace('Hello', 'Hellp');
    const results = [
      await send(PATH, headers, tampered),
      await send(PATH, await signed(PATH, converse, { secret: 'wrong' }), converse),
      await send(PATH, await signed(PATH, converse, { region: 'us-west-2' }), converse),
      await send(PATH, await signed(PATH, converse, { date: new Date(Date.now() - 10 * 60_000) }), converse),
      await send(PATH, { 'content-type': 'application/json' }, converse),
      await send(`${PATH}-stream`, headers, converse),
    ];
    expect(results.map((r) => r.status)).toEqual([403, 403, 403, 403, 403, 403]);
    expect(results[0]?.headers.get('x-amzn-errortype')).toMatch(/^InvalidSignatureException/);
  });

  it('streams ConverseStream as AWS event-stream frames the SDK codec decodes', async () => {
    const path = PATH.replace(/converse$/, 'converse-stream');
    const r = await send(path, await signed(path, converse), converse);
    expect(r.headers.get('content-type')).toBe('application/vnd.amazon.eventstream');
    const bytes = new Uint8Array(await r.arrayBuffer());
    const codec = new EventStreamCodec(toUtf8, fromUtf8);
    const types: string[] = [];
    for (let at = 0; at < bytes.length; ) {
      const total = new DataView(bytes.buffer, at, 4).getUint32(0);
      const m = codec.decode(bytes.subarray(at, at + total));
      types.push(String(m.headers[':event-type']?.value));
      at += total;
    }
    expect(types[0]).toBe('messageStart');
    expect(types).toContain('contentBlockDelta');
    expect(types.slice(-2)).toEqual(['messageStop', 'metadata']);
  });
});
