import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseCatalog } from '@tollgate/catalog';
import { type ProviderSim, startProviderSim } from '@tollgate/provider-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type ProxyStack, startProxyStack } from '../../test/stack';

/**
 * Issue 23, through the real proxy: media URLs never reach a provider whose catalog entry says
 * `remote_media: false` (a self-hosted server would fetch them inside the operator's network), a
 * provider's refusal of a request naming media by URL does not relay its text (a port-scan oracle),
 * and a provider's "Request too large" 429 neither opens its circuit nor rests its key.
 */
interface Fake {
  url: string;
  requests: Array<{ body: Record<string, unknown>; authorization: string | undefined }>;
  close(): Promise<void>;
}

type Answer = (body: Record<string, unknown>, res: ServerResponse) => void;

async function fake(answer: Answer): Promise<Fake> {
  const requests: Fake['requests'] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as Record<string, unknown>;
      requests.push({ body, authorization: req.headers.authorization });
      answer(body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

const completion = (text: string) => (body: Record<string, unknown>, res: ServerResponse) =>
  json(res, 200, {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1,
    model: String(body.model),
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
  });

const TOO_LARGE =
  'Request too large for gpt-4o in organization org-abcdefgh on tokens per min (TPM): Limit 30000, Requested 90000.';
const FETCH_ERROR = 'Cannot connect to host 10.0.0.5:22 ssl:default [Connection refused]';

let sim: ProviderSim;
let stack: ProxyStack;
const fakes: Record<string, Fake> = {};

const model = (id: string, providers: string[]) => `  - id: ${id}
    name: ${id}
    context_length: 8000
    max_output_tokens: 100
    created: 1
    providers: [${providers.map((p) => `{ provider: ${p}, model: gpt-4o }`).join(', ')}]
    pricing: { prompt: "0.000001", completion: "0.000002" }`;

beforeAll(async () => {
  sim = await startProviderSim();
  fakes.selfhosted = await fake(completion('self-hosted ok'));
  fakes.fetcher = await fake((_b, res) =>
    json(res, 400, { error: { message: FETCH_ERROR, type: 'BadRequestError' } }),
  );
  const prompt = (b: Record<string, unknown>) => JSON.stringify(b.messages);
  fakes.tpm = await fake((b, res) =>
    prompt(b).includes('HUGE')
      ? json(res, 429, { error: { message: TOO_LARGE, type: 'tokens', code: 'rate_limit_exceeded' } })
      : completion('tpm ok')(b, res),
  );
  const catalog = parseCatalog(
    `
providers:
  - { name: selfhosted, base_url: "${fakes.selfhosted.url}", remote_media: false }
  - { name: fetcher, base_url: "${fakes.fetcher.url}" }
  - { name: tpm, base_url: "${fakes.tpm.url}", api_key_env: TPM_KEY_1, api_key_envs: [TPM_KEY_2] }
  - { name: sim, base_url: "${sim.baseUrl}", simulator: true }
models:
${[
  model('t/self', ['selfhosted']),
  model('t/self-sim', ['selfhosted', 'sim']),
  model('t/fetcher', ['fetcher']),
  model('t/tpm', ['tpm']),
  model('t/tpm-sim', ['tpm', 'sim']),
].join('\n')}
`,
    { format: 'yaml', env: { TPM_KEY_1: 'key-one', TPM_KEY_2: 'key-two' } },
  );
  stack = await startProxyStack({ env: { CIRCUIT_FAILURE_THRESHOLD: '2' }, deps: { catalog } });
});
afterAll(async () => {
  await stack?.close();
  await sim?.close();
  for (const f of Object.values(fakes)) await f.close();
});

// biome-ignore lint/suspicious/noExplicitAny: test assertions walk arbitrary JSON
type Json = Record<string, any>;

async function chat(body: Record<string, unknown>): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${stack.api}/chat/completions`, {
    method: 'POST',
    headers: bearer(stack.inference),
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Json };
}

const withImage = (url: string, text = 'What is in this image?') => [
  {
    role: 'user',
    content: [
      { type: 'text', text },
      { type: 'image_url', image_url: { url } },
    ],
  },
];
const PIXEL =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

describe('remote_media: false', () => {
  it('never sends a media URL to the provider: 400 naming the field when it is the only one', async () => {
    const before = fakes.selfhosted?.requests.length;
    for (const url of ['http://10.0.0.5:22/', 'https://example.com/cat.png', 'file:///etc/passwd']) {
      const r = await chat({ model: 't/self', messages: withImage(url) });
      expect(r.status, JSON.stringify(r.json)).toBe(400);
      expect(r.json.error.metadata).toMatchObject({
        error_type: 'bad_request',
        field: 'messages.0.content.1.image_url.url',
      });
      expect(r.json.error.message).toMatch(/data: URIs/);
    }
    // Other URL-carrying parts (vLLM reads video_url, audio_url) are media too.
    const video = await chat({
      model: 't/self',
      messages: [{ role: 'user', content: [{ type: 'video_url', video_url: { url: 'http://10.0.0.5/' } }] }],
    });
    expect(video.status, JSON.stringify(video.json)).toBe(400);
    expect(fakes.selfhosted?.requests.length).toBe(before);
  });

  it('takes media as data: URIs', async () => {
    const r = await chat({ model: 't/self', messages: withImage(PIXEL) });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.choices[0].message.content).toBe('self-hosted ok');
  });

  it('skips the provider for a request with a media URL when another candidate takes URLs', async () => {
    const before = fakes.selfhosted?.requests.length;
    const r = await chat({ model: 't/self-sim', messages: withImage('https://example.com/cat.png') });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.provider).toBe('sim');
    expect(fakes.selfhosted?.requests.length).toBe(before);
    // Without a URL the self-hosted provider comes first, as listed.
    const plain = await chat({ model: 't/self-sim', messages: [{ role: 'user', content: 'hi' }] });
    expect(plain.json.provider).toBe('selfhosted');
  });
});

describe("a provider's refusal of a request naming media by URL", () => {
  it('withholds the provider text (it may describe the fetch); other refusals keep it', async () => {
    const r = await chat({ model: 't/fetcher', messages: withImage('http://10.0.0.5:22/') });
    expect(r.status, JSON.stringify(r.json)).toBe(400);
    expect(r.json.error.message).not.toContain('10.0.0.5');
    expect(r.json.error.message).toMatch(/withheld/);
    const plain = await chat({ model: 't/fetcher', messages: [{ role: 'user', content: 'hi' }] });
    expect(plain.status).toBe(400);
    expect(plain.json.error.message).toContain('Cannot connect to host');
  });
});

describe('"Request too large" 429 from a provider', () => {
  it('is the caller’s 413, and neither opens the provider’s circuit nor rests its key', async () => {
    const huge = [{ role: 'user', content: 'HUGE prompt' }];
    for (let i = 0; i < 4; i++) {
      const r = await chat({ model: 't/tpm', messages: huge });
      expect(r.status, JSON.stringify(r.json)).toBe(413);
      expect(r.json.error.metadata).toMatchObject({ reason: 'request_too_large', upstream_status: 429 });
      expect(r.json.error.message).not.toContain('org-abcdefgh');
    }
    // Past CIRCUIT_FAILURE_THRESHOLD (2) such answers, the provider is still tried first…
    const served = await chat({ model: 't/tpm-sim', messages: [{ role: 'user', content: 'hi' }] });
    expect(served.status, JSON.stringify(served.json)).toBe(200);
    expect(served.json.provider).toBe('tpm');
    // …and both keys stay in rotation: a too-large answer on one key does not rest it.
    const keysUsed = () => fakes.tpm?.requests.map((r) => r.authorization) ?? [];
    await chat({ model: 't/tpm', messages: huge });
    const after = keysUsed().length;
    for (let i = 0; i < 2; i++) {
      expect((await chat({ model: 't/tpm', messages: [{ role: 'user', content: 'hi' }] })).status).toBe(200);
    }
    const last = keysUsed().slice(after);
    expect(new Set(last)).toEqual(new Set(['Bearer key-one', 'Bearer key-two']));
  });
});
