/**
 * The OpenAPI document (@tollgate/openapi) is well-formed OpenAPI 3.1, and the running stack (every
 * service in-process, real Postgres/Redis/RabbitMQ) matches it: every documented route answers under
 * both prefixes, /openapi.json serves the document, and every response the tests can trigger has a
 * documented status and exactly the documented shape.
 */
import { randomUUID } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import { generateKey } from '@tollgate/auth';
import { usageEvent } from '@tollgate/billing/testing';
import { type HttpMethod, openapiDocument, openapiJson } from '@tollgate/openapi';
import { loadConfig as loadProxyConfig, startProxy } from '@tollgate/proxy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDashboard, type TestDashboard } from './support/dashboard';
import {
  createAjv,
  deref,
  documentedOperations,
  documentedResponse,
  findOperation,
  prepareSchema,
  ResponseChecker,
  sseData,
} from './support/openapi';
import { expressRoutes, template } from './support/routes';
import { type ApiResponse, describeResponse, MODEL, type Stack, startStack } from './support/stack';

const doc = openapiDocument;

/** The routes of the spec (§4) and DESIGN.md, relative to the base URL. */
const SPEC_ROUTES: Array<[HttpMethod, string]> = [
  ['post', '/keys'],
  ['get', '/keys'],
  ['get', '/keys/{hash}'],
  ['patch', '/keys/{hash}'],
  ['delete', '/keys/{hash}'],
  ['get', '/teams'],
  ['post', '/teams'],
  ['get', '/teams/{id}'],
  ['patch', '/teams/{id}'],
  ['delete', '/teams/{id}'],
  ['get', '/key'],
  ['get', '/credits'],
  ['post', '/chat/completions'],
  ['post', '/embeddings'],
  ['get', '/models'],
  ['get', '/models/{author}/{slug}/endpoints'],
  ['get', '/generation'],
  ['get', '/openapi.json'],
  ['post', '/messages'],
  ['post', '/messages/count_tokens'],
];

function allRefs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const n of node) allRefs(n, out);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else allRefs(v, out);
    }
  }
  return out;
}

describe('the OpenAPI document', () => {
  it('is valid against the official OpenAPI 3.1 schema', async () => {
    const result = await new Validator().validate(structuredClone(doc) as unknown as Record<string, unknown>);
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
  });

  it('resolves every $ref inside the document', () => {
    const refs = allRefs(doc);
    expect(refs.length).toBeGreaterThan(50);
    for (const ref of new Set(refs)) {
      expect(ref, 'only local refs').toMatch(/^#\/components\//);
      expect(() => deref({ $ref: ref }), ref).not.toThrow();
    }
  });

  it('compiles every component schema as JSON Schema 2020-12 in ajv strict mode', () => {
    const ajv = createAjv(true);
    for (const name of Object.keys(doc.components.schemas)) {
      expect(
        () => ajv.compile(prepareSchema({ $ref: `#/components/schemas/${name}` }, true)),
        name,
      ).not.toThrow();
    }
  });

  it('describes every route of the spec, with /api/v1 as the server and /v1 as its alias', () => {
    for (const [method, path] of SPEC_ROUTES)
      expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    expect(doc.servers.map((s) => s.url)).toEqual(expect.arrayContaining(['/api/v1', '/v1']));
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
  });

  it('gives every operation a unique operationId, a summary, its key scope and error responses in the envelope', () => {
    const ids = new Set<string>();
    for (const { method, path, operation } of documentedOperations()) {
      const where = `${method} ${path}`;
      expect(ids.has(operation.operationId), `${where} operationId unique`).toBe(false);
      ids.add(operation.operationId);
      expect(operation.summary, where).toBeTruthy();
      expect(['inference', 'management', 'any', 'none'], where).toContain(operation['x-required-scope']);
      const open = operation['x-required-scope'] === 'none';
      expect(operation.security === undefined ? doc.security : operation.security, where).toEqual(
        open ? [] : [{ bearerAuth: [] }],
      );
      const statuses = Object.keys(operation.responses);
      expect(
        statuses.some((s) => /^2\d\d$/.test(s)),
        `${where} has a success response`,
      ).toBe(true);
      // The Messages routes answer errors in Anthropic's shape (and its 529 for "overloaded").
      const anthropic = operation['x-error-shape'] === 'anthropic';
      if (!open) {
        expect(statuses, where).toEqual(
          expect.arrayContaining(['401', anthropic ? '529' : '503', 'default']),
        );
        if (operation['x-required-scope'] !== 'any')
          expect(statuses, `${where} documents 403`).toContain('403');
      }
      for (const status of statuses.filter((s) => !/^2/.test(s))) {
        const schema = deref<{ content: Record<string, { schema: unknown }> }>(operation.responses[status])
          .content['application/json']?.schema;
        expect(schema, `${where} ${status}`).toEqual({
          $ref: `#/components/schemas/${anthropic ? 'AnthropicError' : 'ErrorEnvelope'}`,
        });
      }
    }
  });

  it('declares every path parameter it uses', () => {
    for (const [path, item] of Object.entries(doc.paths)) {
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const params = (item.parameters ?? []).map((p) => deref<{ name: string; in: string }>(p));
      for (const name of names) {
        expect(
          params.find((p) => p.in === 'path' && p.name === name),
          `${path} declares ${name}`,
        ).toBeDefined();
      }
    }
  });

  it('documents X-Title, X-Generation-Id, the usage object and the event stream of chat completions', () => {
    const op = findOperation('post', '/chat/completions');
    const params = (op.parameters ?? []).map((p) => deref<{ name: string; in: string }>(p));
    expect(params).toContainEqual(expect.objectContaining({ name: 'X-Title', in: 'header' }));
    const ok = documentedResponse('post', '/chat/completions', 200)!;
    expect(Object.keys(ok.headers ?? {})).toContain('X-Generation-Id');
    expect(Object.keys(ok.content ?? {})).toEqual(['application/json', 'text/event-stream']);
    expect(ok.content?.['text/event-stream']?.['x-item-schema']).toEqual({
      $ref: '#/components/schemas/ChatCompletionStreamEvent',
    });
    const usage = doc.components.schemas.Usage as { required: string[] };
    expect(usage.required).toEqual(
      expect.arrayContaining(['prompt_tokens_details', 'completion_tokens_details', 'cost', 'is_byok']),
    );
    const request = doc.components.schemas.ChatCompletionRequest as { additionalProperties: unknown };
    expect(request.additionalProperties).toBe(true);
  });

  it('has examples that match their own schemas', () => {
    const ajv = createAjv(false);
    let count = 0;
    for (const { method, path, operation } of documentedOperations()) {
      const bodies = deref<{
        content?: Record<string, { schema: unknown; example?: unknown; examples?: object }>;
      }>(operation.requestBody ?? {}).content;
      const responses = Object.values(operation.responses).map((r) =>
        deref<{ content?: Record<string, { schema: unknown; example?: unknown; examples?: object }> }>(r),
      );
      for (const content of [bodies, ...responses.map((r) => r.content)]) {
        const media = content?.['application/json'];
        if (!media?.schema) continue;
        const values = [
          ...(media.example === undefined ? [] : [media.example]),
          ...Object.values(media.examples ?? {}).map((e) => (e as { value: unknown }).value),
        ];
        const validate = ajv.compile(prepareSchema(media.schema, false));
        for (const value of values) {
          count++;
          expect(validate(value), `${method} ${path}: ${ajv.errorsText(validate.errors)}`).toBe(true);
        }
      }
    }
    expect(count).toBeGreaterThan(10);
  });
});

describe('the running stack, checked against the document', () => {
  let stack: Stack;
  const checker = new ResponseChecker();
  const chat = (content = 'Hello!', extra: Record<string, unknown> = {}) => ({
    model: MODEL,
    messages: [{ role: 'user', content }],
    max_tokens: 16,
    ...extra,
  });

  /** Asserts the response has the expected status and conforms to the document. */
  function conforms(method: string, path: string, res: ApiResponse, status: number, contentType?: string) {
    expect(res.status, describeResponse(res)).toBe(status);
    const errors = checker.check(method, path, res, { contentType });
    expect(errors, `${method.toUpperCase()} ${path} → ${describeResponse(res)}`).toEqual([]);
  }

  let dash: TestDashboard;
  beforeAll(async () => {
    // Webhooks may point at this machine (the test's own receiver address; nothing listens there).
    // `dashboard`: keys reaches the dashboard (a team's members are its users; its audit log).
    stack = await startStack({ billingEnv: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1' }, dashboard: true });
    dash = await startTestDashboard(stack);
  });
  afterAll(async () => {
    await dash?.close();
    await stack?.close();
  });

  async function request(origin: string, method: string, path: string, key: string, body?: unknown) {
    const res = await fetch(`${origin}/api/v1${path}`, {
      method: method.toUpperCase(),
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, text, body: parsed } as ApiResponse;
  }

  it('serves the document at /api/v1/openapi.json and /v1/openapi.json, without a key', async () => {
    for (const prefix of ['/api/v1', '/v1'] as const) {
      const res = await stack.api('/openapi.json', { prefix });
      conforms('get', '/openapi.json', res, 200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual(doc);
      expect(res.text).toBe(openapiJson);
    }
  });

  it('answers every documented route under both prefixes (none is "No route")', async () => {
    const fakeHash = randomUUID();
    const keyFor = (scope: string | undefined) =>
      scope === 'management'
        ? stack.account.managementKey
        : scope === 'none'
          ? undefined
          : stack.inferenceKey;
    for (const { method, path, operation } of documentedOperations()) {
      for (const prefix of ['/api/v1', '/v1'] as const) {
        const res = await stack.api(path.replace('{hash}', fakeHash), {
          prefix,
          method: method.toUpperCase(),
          key: keyFor(operation['x-required-scope']),
          body: method === 'post' || method === 'patch' ? {} : undefined,
        });
        expect(res.text, `${method} ${prefix}${path}`).not.toMatch(/No route/);
        expect(
          Object.keys(operation.responses),
          `${method} ${prefix}${path} ${describeResponse(res)}`,
        ).toContain(String(res.status));
      }
    }
  });

  it('registers exactly the documented routes: no route without an entry, no entry without a route', () => {
    const { proxy, keys, billing } = stack.services;
    // What keys and billing serve; the proxy forwards its `all` routes (`/keys/{*rest}`, …) to them.
    const forwardedTo = [...expressRoutes(keys.app), ...expressRoutes(billing.app)];
    const routesUnder = (mount: '/api/v1' | '/v1') => {
      const routes = new Set<string>();
      const under = (path: string) => (path.startsWith(`${mount}/`) ? path.slice(mount.length) : null);
      for (const { method, path: full } of expressRoutes(proxy.routes.app)) {
        const path = under(full);
        if (path === null) continue;
        if (method !== 'all') {
          routes.add(`${method} ${template(path)}`);
          continue;
        }
        const prefix = path.replace(/\/\{\*\w+\}$/, '');
        const served = forwardedTo.filter((r) => r.path === prefix || r.path.startsWith(`${prefix}/`));
        expect(served, `${mount}${path} is forwarded to no route of keys or billing`).not.toEqual([]);
        for (const r of served) routes.add(`${r.method} ${template(r.path)}`);
      }
      for (const full of proxy.routes.doors.paths) {
        const path = under(full);
        if (path !== null) routes.add(`post ${template(path)}`);
      }
      return [...routes].sort();
    };
    const documented = documentedOperations()
      .map(({ method, path }) => `${method} ${template(path)}`)
      .sort();
    expect(routesUnder('/api/v1')).toEqual(documented);
    expect(routesUnder('/v1')).toEqual(documented);
  });

  describe('POST /chat/completions', () => {
    it('answers a completion in the documented shape, with X-Generation-Id = id', async () => {
      const res = await stack.api('/chat/completions', { key: stack.inferenceKey, body: chat() });
      conforms('post', '/chat/completions', res, 200);
      expect(res.headers.get('x-generation-id')).toBe(res.body.id);
    });

    it('streams content chunks, then the usage chunk, then [DONE], each event in the documented shape', async () => {
      const res = await stack.api('/chat/completions', {
        key: stack.inferenceKey,
        body: chat('Stream please', { stream: true, sim: { completion_tokens: 3 } }),
      });
      conforms('post', '/chat/completions', res, 200, 'text/event-stream');
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = sseData(res.text);
      expect(events.at(-1)).toBe('[DONE]');
      const json = events.slice(0, -1).map((e) => JSON.parse(e));
      const usageChunk = json.at(-1);
      expect(checker.checkSchema('ChatCompletionUsageChunk', usageChunk), res.text).toEqual([]);
      for (const chunk of json.slice(0, -1)) {
        expect(checker.checkSchema('ChatCompletionChunk', chunk), JSON.stringify(chunk)).toEqual([]);
        expect(chunk.id).toBe(res.headers.get('x-generation-id'));
      }
      expect(json.slice(0, -1).some((c) => c.choices[0]?.finish_reason === 'stop')).toBe(true);
    });

    it('ends a stream whose provider fails mid-way with the documented error chunk and [DONE]', async () => {
      const res = await stack.api('/chat/completions', {
        key: stack.inferenceKey,
        body: chat('Fail please', { stream: true, sim: { error_after_chunks: 2 } }),
      });
      conforms('post', '/chat/completions', res, 200, 'text/event-stream');
      const events = sseData(res.text);
      expect(events.at(-1)).toBe('[DONE]');
      const last = JSON.parse(events.at(-2)!);
      expect(checker.checkSchema('ChatCompletionErrorChunk', last), res.text).toEqual([]);
      for (const e of events.slice(0, -2)) {
        expect(checker.checkSchema('ChatCompletionStreamEvent', JSON.parse(e)), e).toEqual([]);
      }
    });

    it('documents its 400s: unknown model, missing messages, invalid JSON', async () => {
      for (const body of [chat('x', { model: 'nobody/nothing' }), { model: MODEL }, '{"model": oops']) {
        const res = await stack.api('/chat/completions', { key: stack.inferenceKey, body });
        conforms('post', '/chat/completions', res, 400);
      }
    });

    it('documents 401 (no key, unknown key) and 403 (management key, with required_scope)', async () => {
      conforms('post', '/chat/completions', await stack.api('/chat/completions', { body: chat() }), 401);
      const unknown = await stack.api('/chat/completions', { key: generateKey(), body: chat() });
      conforms('post', '/chat/completions', unknown, 401);
      const wrong = await stack.api('/chat/completions', { key: stack.account.managementKey, body: chat() });
      conforms('post', '/chat/completions', wrong, 403);
      expect(wrong.body.error.metadata).toMatchObject({
        error_type: 'forbidden',
        required_scope: 'inference',
      });
    });

    it('documents 402 when the account has no credits', async () => {
      const broke = await stack.createAccount();
      const { key } = await stack.createInferenceKey(broke.managementKey);
      const res = await stack.api('/chat/completions', { key, body: chat() });
      conforms('post', '/chat/completions', res, 402);
      expect(res.body.error.metadata.error_type).toBe('payment_required');
    });

    it('documents 403 key_limit_exceeded once the key has spent its limit', async () => {
      const { key } = await stack.createInferenceKey(stack.account.managementKey, {
        limit: 0.000001,
        limit_reset: 'daily',
      });
      const res = await stack.api('/chat/completions', { key, body: chat('x', { max_tokens: 1000 }) });
      conforms('post', '/chat/completions', res, 403);
      expect(res.body.error.metadata.error_type).toBe('key_limit_exceeded');
    });

    it('documents 413 for a body over the limit', async () => {
      const res = await stack.api('/chat/completions', {
        key: stack.inferenceKey,
        body: chat('x'.repeat(11 * 1024 * 1024)),
      });
      conforms('post', '/chat/completions', res, 413);
    });

    it('documents 415 for a compressed body', async () => {
      const res = await stack.api('/chat/completions', {
        key: stack.inferenceKey,
        body: chat(),
        headers: { 'content-encoding': 'gzip' },
      });
      conforms('post', '/chat/completions', res, 415);
    });

    it('documents 429 relayed from a rate-limited provider', async () => {
      const res = await stack.api('/chat/completions', {
        key: stack.inferenceKey,
        body: chat('x', { sim: { error_status: 429 } }),
      });
      conforms('post', '/chat/completions', res, 429);
      expect(res.body.error.metadata).toMatchObject({ provider_name: 'sim', upstream_status: 429 });
    });

    it('documents 504 when the provider does not answer within the upstream timeout', async () => {
      const slow = await startProxy(
        loadProxyConfig({
          ...stack.infraEnv(),
          KEYS_URL: stack.services.keys.url,
          BILLING_URL: stack.services.billing.url,
          UPSTREAM_TIMEOUT_MS: '150',
        }),
        { catalog: stack.catalog },
      );
      try {
        const res = await request(
          slow.url,
          'post',
          '/chat/completions',
          stack.inferenceKey,
          chat('x', {
            sim: { ttft_ms: 2000 },
          }),
        );
        conforms('post', '/chat/completions', res, 504);
        expect(res.body.error.metadata).toMatchObject({ error_type: 'timeout', provider_name: 'sim' });
      } finally {
        await slow.close();
      }
    });

    it('documents 502 when the provider fails before the first byte', async () => {
      const res = await stack.api('/chat/completions', {
        key: stack.inferenceKey,
        body: chat('x', { sim: { error_status: 500 } }),
      });
      conforms('post', '/chat/completions', res, 502);
      expect(res.body.error.metadata).toMatchObject({ error_type: 'provider_error', provider_name: 'sim' });
    });
  });

  describe('POST /embeddings', () => {
    const EMBEDDING_MODEL = 'openai/text-embedding-3-small';
    const emb = (extra: Record<string, unknown> = {}) => ({
      model: EMBEDDING_MODEL,
      input: ['a', 'b'],
      ...extra,
    });

    it('answers floats and base64 in the documented shape, and GET /models filters to it', async () => {
      for (const encoding_format of ['float', 'base64']) {
        const res = await stack.api('/embeddings', {
          key: stack.inferenceKey,
          body: emb({ encoding_format }),
        });
        conforms('post', '/embeddings', res, 200);
      }
      const list = await stack.api('/models?output_modalities=embeddings', { key: stack.inferenceKey });
      conforms('get', '/models', list, 200);
      expect(list.body.data.map((m: { id: string }) => m.id)).toEqual([EMBEDDING_MODEL]);
      conforms(
        'get',
        '/models',
        await stack.api('/models?output_modalities=audio', { key: stack.inferenceKey }),
        400,
      );
    });

    it('documents 400, 401, 402, 403 and 413', async () => {
      const post = (body: unknown, key?: string) => stack.api('/embeddings', { key, body });
      conforms('post', '/embeddings', await post(emb({ input: [] }), stack.inferenceKey), 400);
      conforms('post', '/embeddings', await post(emb({ model: MODEL }), stack.inferenceKey), 400);
      conforms('post', '/embeddings', await post(emb()), 401);
      conforms('post', '/embeddings', await post(emb(), stack.account.managementKey), 403);
      const broke = await stack.createAccount();
      const { key } = await stack.createInferenceKey(broke.managementKey);
      conforms('post', '/embeddings', await post(emb(), key), 402);
      conforms(
        'post',
        '/embeddings',
        await post(emb({ input: 'x'.repeat(11 * 1024 * 1024) }), stack.inferenceKey),
        413,
      );
    });
  });

  describe('POST /messages (Anthropic Messages API)', () => {
    const message = (model: string, extra: Record<string, unknown> = {}) => ({
      model,
      max_tokens: 32,
      messages: [{ role: 'user', content: 'Hello!' }],
      ...extra,
    });
    const models = ['anthropic/claude-sonnet-4.5', MODEL];

    it('answers a Message in the documented shape, natively and translated, with X-Generation-Id', async () => {
      for (const model of models) {
        const res = await stack.api('/messages', { key: stack.inferenceKey, body: message(model) });
        conforms('post', '/messages', res, 200);
        expect(res.headers.get('x-generation-id')).toMatch(/^gen-/);
      }
    });

    it('streams Anthropic events, each in the documented shape', async () => {
      for (const model of models) {
        const res = await stack.api('/messages', {
          key: stack.inferenceKey,
          body: message(model, { stream: true }),
        });
        conforms('post', '/messages', res, 200, 'text/event-stream');
        const events = sseData(res.text).map((e) => JSON.parse(e));
        expect(events[0].type).toBe('message_start');
        expect(events.at(-1).type).toBe('message_stop');
        for (const e of events)
          expect(checker.checkSchema('MessageStreamEvent', e), JSON.stringify(e)).toEqual([]);
      }
    });

    it('documents its errors in Anthropic’s shape: 400, 401, 402, 403, and count_tokens', async () => {
      conforms(
        'post',
        '/messages',
        await stack.api('/messages', { key: stack.inferenceKey, body: { model: MODEL } }),
        400,
      );
      conforms(
        'post',
        '/messages',
        await stack.api('/messages', { key: generateKey(), body: message(MODEL) }),
        401,
      );
      const wrong = await stack.api('/messages', { key: stack.account.managementKey, body: message(MODEL) });
      conforms('post', '/messages', wrong, 403);
      const { key } = await stack.createInferenceKey(stack.account.managementKey, { limit: 0.000001 });
      const limited = await stack.api('/messages', { key, body: message(MODEL, { max_tokens: 1000 }) });
      conforms('post', '/messages', limited, 402);
      expect(limited.body.error.type).toBe('billing_error');
      const countBody = { model: MODEL, messages: [{ role: 'user', content: 'Hello!' }] };
      const count = await stack.api('/messages/count_tokens', { key: stack.inferenceKey, body: countBody });
      conforms('post', '/messages/count_tokens', count, 200);
      const path = '/messages/count_tokens';
      conforms('post', path, await stack.api(path, { key: stack.inferenceKey, body: { model: MODEL } }), 400);
      conforms('post', path, await stack.api(path, { key: generateKey(), body: countBody }), 401);
      conforms(
        'post',
        path,
        await stack.api(path, { key: stack.account.managementKey, body: countBody }),
        403,
      );
    });

    it('lists the models in Anthropic’s shape too, with anthropic-version', async () => {
      const res = await stack.api('/models', {
        key: stack.inferenceKey,
        headers: { 'anthropic-version': '2023-06-01' },
      });
      conforms('get', '/models', res, 200);
      expect(res.body.has_more).toBe(false);
      expect(res.body.data[0]).toMatchObject({ type: 'model', display_name: expect.any(String) });
    });
  });

  describe('POST /responses', () => {
    const responses = (input: unknown = 'Hello!', extra: Record<string, unknown> = {}) => ({
      model: MODEL,
      input,
      max_output_tokens: 16,
      ...extra,
    });

    it('answers a Response in the documented shape, with X-Generation-Id = id and the withheld tools named', async () => {
      const res = await stack.api('/responses', {
        key: stack.inferenceKey,
        body: responses('Hi', { tools: [{ type: 'web_search' }], instructions: 'Be brief.' }),
      });
      conforms('post', '/responses', res, 200);
      expect(res.headers.get('x-generation-id')).toBe(res.body.id);
      expect(res.headers.get('x-tollgate-withheld-tools')).toBe('web_search');
    });

    it('streams the Responses events, each in the documented shape, response.completed last', async () => {
      const res = await stack.api('/responses', {
        key: stack.inferenceKey,
        body: responses('Stream', { stream: true, max_output_tokens: 200 }),
      });
      conforms('post', '/responses', res, 200, 'text/event-stream');
      const events = sseData(res.text).map((e) => JSON.parse(e));
      for (const e of events)
        expect(checker.checkSchema('ResponsesStreamEvent', e), JSON.stringify(e)).toEqual([]);
      expect(events.at(-1).type).toBe('response.completed');
      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    });

    it("documents its 400s (stored state, malformed input), 401, 402, 403 and 502 in the envelope with OpenAI's type and param", async () => {
      for (const body of [
        responses('x', { previous_response_id: 'resp_1' }),
        { model: MODEL },
        responses(5),
      ]) {
        const res = await stack.api('/responses', { key: stack.inferenceKey, body });
        conforms('post', '/responses', res, 400);
        expect(res.body.error.type).toBe('invalid_request_error');
      }
      conforms('post', '/responses', await stack.api('/responses', { body: responses() }), 401);
      const wrong = await stack.api('/responses', { key: stack.account.managementKey, body: responses() });
      conforms('post', '/responses', wrong, 403);
      expect(wrong.body.error).toMatchObject({
        type: 'permission_error',
        metadata: { required_scope: 'inference' },
      });
      const broke = await stack.createAccount();
      const { key } = await stack.createInferenceKey(broke.managementKey);
      const poor = await stack.api('/responses', { key, body: responses() });
      conforms('post', '/responses', poor, 402);
      expect(poor.body.error).toMatchObject({ code: 402, type: 'insufficient_quota' });
      const failed = await stack.api('/responses', {
        key: stack.inferenceKey,
        body: responses('x', { sim: { error_status: 500 } }),
      });
      conforms('post', '/responses', failed, 502);
    });
  });

  describe('GET /models and GET /generation', () => {
    it('lists the catalog in the documented shape', async () => {
      const res = await stack.api('/models', { key: stack.inferenceKey });
      conforms('get', '/models', res, 200);
      expect(res.body.data.map((m: { id: string }) => m.id)).toContain(MODEL);
      conforms('get', '/models', await stack.api('/models', { key: stack.account.managementKey }), 403);
      conforms('get', '/models', await stack.api('/models', { key: generateKey() }), 401);
    });

    it('lists the endpoints of a model in the documented shape', async () => {
      const path = '/models/{author}/{slug}/endpoints';
      const res = await stack.api(`/models/${MODEL}/endpoints`, { key: stack.inferenceKey });
      conforms('get', path, res, 200);
      expect(res.body.data.id).toBe(MODEL);
      const other = await stack.api('/models/nobody/nothing/endpoints', { key: stack.inferenceKey });
      conforms('get', path, other, 404);
      const asMgmt = await stack.api(`/models/${MODEL}/endpoints`, { key: stack.account.managementKey });
      conforms('get', path, asMgmt, 403);
      conforms('get', path, await stack.api(`/models/${MODEL}/endpoints`, { key: generateKey() }), 401);
    });

    it('returns the generation record, with X-Title as app', async () => {
      const done = await stack.api('/chat/completions', {
        key: stack.inferenceKey,
        body: chat(),
        headers: { 'X-Title': 'OpenAPI conformance' },
      });
      expect(done.status, describeResponse(done)).toBe(200);
      const res = await stack.waitForGeneration(done.body.id);
      conforms('get', '/generation', res, 200);
      expect(res.body.data).toMatchObject({
        id: done.body.id,
        app: 'OpenAPI conformance',
        usage_source: 'provider',
      });
    });

    it('documents 400 (no id), 404 (unknown id), 403 (management key), 401', async () => {
      conforms('get', '/generation', await stack.api('/generation', { key: stack.inferenceKey }), 400);
      const unknown = await stack.api('/generation?id=gen-1700000000-AAAAAAAAAAAAAAAAAAAA', {
        key: stack.inferenceKey,
      });
      conforms('get', '/generation', unknown, 404);
      const wrong = await stack.api('/generation?id=gen-1700000000-AAAAAAAAAAAAAAAAAAAA', {
        key: stack.account.managementKey,
      });
      conforms('get', '/generation', wrong, 403);
      conforms('get', '/generation', await stack.api('/generation?id=x', { key: generateKey() }), 401);
    });
  });

  describe('key management', () => {
    it('walks every key route through its documented responses', async () => {
      const m = stack.account.managementKey;
      const created = await stack.api('/keys', {
        key: m,
        body: { name: 'doc', limit: 5, limit_reset: 'weekly' },
      });
      conforms('post', '/keys', created, 201);
      const hash: string = created.body.data.hash;

      conforms('post', '/keys', await stack.api('/keys', { key: m, body: { limit: 5 } }), 400);
      conforms('post', '/keys', await stack.api('/keys', { key: m, body: { name: 'x', limit: -1 } }), 400);
      conforms('post', '/keys', await stack.api('/keys', { body: { name: 'x' } }), 401);
      conforms(
        'post',
        '/keys',
        await stack.api('/keys', { key: stack.inferenceKey, body: { name: 'x' } }),
        403,
      );
      const big = await stack.api('/keys', { key: m, body: { name: 'x'.repeat(2 * 1024 * 1024) } });
      conforms('post', '/keys', big, 413);

      conforms('get', '/keys', await stack.api('/keys', { key: m }), 200);
      conforms('get', '/keys', await stack.api('/keys?include_disabled=true&offset=0', { key: m }), 200);
      conforms('get', '/keys', await stack.api('/keys?include_disabled=maybe', { key: m }), 400);
      conforms('get', '/keys', await stack.api('/keys', { key: stack.inferenceKey }), 403);
      conforms('get', '/keys', await stack.api('/keys', {}), 401);

      const one = `/keys/${hash}`;
      conforms('get', '/keys/{hash}', await stack.api(one, { key: m }), 200);
      conforms('get', '/keys/{hash}', await stack.api('/keys/not-a-uuid', { key: m }), 400);
      conforms('get', '/keys/{hash}', await stack.api(`/keys/${randomUUID()}`, { key: m }), 404);
      conforms('get', '/keys/{hash}', await stack.api(one, { key: stack.inferenceKey }), 403);
      conforms('get', '/keys/{hash}', await stack.api(one, {}), 401);

      const other = await stack.createAccount();
      const foreign = await stack.api(one, { key: other.managementKey });
      conforms('get', '/keys/{hash}', foreign, 404);

      const patch = (body: unknown, key = m, path = one) => stack.api(path, { key, method: 'PATCH', body });
      conforms('patch', '/keys/{hash}', await patch({ name: 'renamed', disabled: true, limit: null }), 200);
      conforms('patch', '/keys/{hash}', await patch({ limit_reset: 'yearly' }), 400);
      conforms('patch', '/keys/{hash}', await patch({ name: 'x' }, m, `/keys/${randomUUID()}`), 404);
      conforms('patch', '/keys/{hash}', await patch({ name: 'x' }, stack.inferenceKey), 403);
      conforms('patch', '/keys/{hash}', await patch({ name: 'x' }, generateKey()), 401);
      conforms('patch', '/keys/{hash}', await patch({ name: 'x'.repeat(2 * 1024 * 1024) }), 413);

      const del = (path: string, key = m) => stack.api(path, { key, method: 'DELETE' });
      conforms('delete', '/keys/{hash}', await del(one, stack.inferenceKey), 403);
      conforms('delete', '/keys/{hash}', await del(`/keys/${stack.account.managementKeyId}`), 403);
      conforms('delete', '/keys/{hash}', await del('/keys/nope'), 400);
      conforms('delete', '/keys/{hash}', await del(`/keys/${randomUUID()}`), 404);
      conforms('delete', '/keys/{hash}', await del(one, generateKey()), 401);
      const revoked = await del(one);
      conforms('delete', '/keys/{hash}', revoked, 200);
      expect(revoked.body.data).toEqual({ hash, deleted: true });
      conforms('patch', '/keys/{hash}', await patch({ name: 'again' }), 409);
    });

    it('walks every webhook route through its documented responses, through the proxy', async () => {
      const m = stack.account.managementKey;
      const url = 'http://127.0.0.1:9/hook';
      const created = await stack.api('/webhooks', { key: m, body: { url, low_credit: 1.5 } });
      conforms('post', '/webhooks', created, 201);
      const id: string = created.body.data.id;
      conforms(
        'post',
        '/webhooks',
        await stack.api('/webhooks', { key: m, body: { url: 'http://10.0.0.1/' } }),
        400,
      );
      conforms('post', '/webhooks', await stack.api('/webhooks', { body: { url } }), 401);
      conforms(
        'post',
        '/webhooks',
        await stack.api('/webhooks', { key: stack.inferenceKey, body: { url } }),
        403,
      );
      conforms('get', '/webhooks', await stack.api('/webhooks', { key: m }), 200);
      conforms('get', '/webhooks', await stack.api('/webhooks', {}), 401);
      conforms('get', '/webhooks', await stack.api('/webhooks', { key: stack.inferenceKey }), 403);
      const other = await stack.createAccount();
      const routes = [
        ['get', '/webhooks/{id}', ''],
        ['patch', '/webhooks/{id}', ''],
        ['delete', '/webhooks/{id}', ''],
        ['post', '/webhooks/{id}/test', '/test'],
        ['get', '/webhooks/{id}/deliveries', '/deliveries'],
      ] as const;
      for (const [method, route, tail] of routes) {
        const init = {
          method: method.toUpperCase(),
          body: method === 'patch' ? { enabled: true } : undefined,
        };
        if (method !== 'delete')
          conforms(method, route, await stack.api(`/webhooks/${id}${tail}`, { ...init, key: m }), 200);
        conforms(method, route, await stack.api(`/webhooks/nope${tail}`, { ...init, key: m }), 400);
        conforms(
          method,
          route,
          await stack.api(`/webhooks/${id}${tail}`, { ...init, key: other.managementKey }),
          404,
        );
        conforms(
          method,
          route,
          await stack.api(`/webhooks/${id}${tail}`, { ...init, key: generateKey() }),
          401,
        );
        conforms(
          method,
          route,
          await stack.api(`/webhooks/${id}${tail}`, { ...init, key: stack.inferenceKey }),
          403,
        );
      }
      conforms(
        'patch',
        '/webhooks/{id}',
        await stack.api(`/webhooks/${id}`, { key: m, method: 'PATCH', body: { thresholds: [0] } }),
        400,
      );
      const log = await stack.api(`/webhooks/${id}/deliveries?limit=1`, { key: m });
      conforms('get', '/webhooks/{id}/deliveries', log, 200);
      expect(log.body.data[0]).toMatchObject({
        type: 'webhook.test',
        status_code: null,
        delivery_status: 'pending',
      });
      conforms(
        'delete',
        '/webhooks/{id}',
        await stack.api(`/webhooks/${id}`, { key: m, method: 'DELETE' }),
        200,
      );
    });

    it('walks the account routes through their documented responses, through the proxy', async () => {
      const m = stack.account.managementKey;
      conforms('get', '/account', await stack.api('/account', { key: m }), 200);
      conforms('get', '/account', await stack.api('/account', {}), 401);
      conforms('get', '/account', await stack.api('/account', { key: stack.inferenceKey }), 403);
      const patch = (body: unknown, key = m) => stack.api('/account', { key, method: 'PATCH', body });
      const on = await patch({ store_bodies: true });
      conforms('patch', '/account', on, 200);
      expect(on.body.data.store_bodies).toBe(true);
      conforms('patch', '/account', await patch({ store_bodies: false }), 200);
      conforms('patch', '/account', await patch({ store_bodies: 1 }), 400);
      conforms('patch', '/account', await patch({ slug: 'x' }), 400);
      conforms('patch', '/account', await patch({}, stack.inferenceKey), 403);
      conforms('patch', '/account', await stack.api('/account', { method: 'PATCH', body: {} }), 401);
    });

    it('walks every team route through its documented responses, through the proxy', async () => {
      const m = stack.account.managementKey;
      const created = await stack.api('/teams', { key: m, body: { name: 'doc team' } });
      conforms('post', '/teams', created, 201);
      const id: string = created.body.data.id;
      conforms('post', '/teams', await stack.api('/teams', { key: m, body: { name: '' } }), 400);
      conforms('post', '/teams', await stack.api('/teams', { body: { name: 'x' } }), 401);
      conforms(
        'post',
        '/teams',
        await stack.api('/teams', { key: stack.inferenceKey, body: { name: 'x' } }),
        403,
      );
      conforms('get', '/teams', await stack.api('/teams?offset=0', { key: m }), 200);
      conforms('get', '/teams', await stack.api('/teams?offset=-1', { key: m }), 400);
      const one = `/teams/${id}`;
      conforms('get', '/teams/{id}', await stack.api(one, { key: m }), 200);
      const other = await stack.createAccount();
      conforms('get', '/teams/{id}', await stack.api(one, { key: other.managementKey }), 404);
      conforms('get', '/teams/{id}', await stack.api('/teams/nope', { key: m }), 400);
      const key = await stack.api('/keys', { key: m, body: { name: 'in team', team_id: id } });
      conforms('post', '/keys', key, 201);
      expect(key.body.data.team_id).toBe(id);
      const patch = (body: unknown, path = one) => stack.api(path, { key: m, method: 'PATCH', body });
      conforms('patch', '/teams/{id}', await patch({ name: 'renamed' }), 200);
      conforms('patch', '/teams/{id}', await patch({ name: 'x' }, `/teams/${randomUUID()}`), 404);
      const del = (path = one) => stack.api(path, { key: m, method: 'DELETE' });
      conforms('delete', '/teams/{id}', await del(), 409);
      conforms(
        'patch',
        '/keys/{hash}',
        await stack.api(`/keys/${key.body.data.hash}`, { key: m, method: 'PATCH', body: { team_id: null } }),
        200,
      );
      conforms('delete', '/teams/{id}', await del(), 200);
      conforms('delete', '/teams/{id}', await del(), 404);
      conforms('delete', '/teams/{id}', await del('/teams/nope'), 400);
      conforms('patch', '/teams/{id}', await patch({ name: '' }), 400);
      conforms('get', '/teams', await stack.api('/teams', {}), 401);
      conforms('get', '/teams', await stack.api('/teams', { key: stack.inferenceKey }), 403);
      for (const [method, route] of [
        ['get', '/teams/{id}'],
        ['patch', '/teams/{id}'],
        ['delete', '/teams/{id}'],
      ] as const) {
        const init = { method: method.toUpperCase(), body: method === 'patch' ? { name: 'x' } : undefined };
        conforms(method, route, await stack.api(one, { ...init, key: generateKey() }), 401);
        conforms(method, route, await stack.api(one, { ...init, key: stack.inferenceKey }), 403);
      }
    });

    it("walks a team's member routes through their documented responses, through the proxy", async () => {
      const m = stack.account.managementKey;
      const team = (await stack.api('/teams', { key: m, body: { name: 'doc members' } })).body.data
        .id as string;
      const user = await dash.createUser(stack.account.id, 'viewer');
      const list = `/teams/${team}/members`;
      const add = (body: unknown, key = m, path = list) => stack.api(path, { key, body });
      const added = await add({ email: user.email });
      conforms('post', '/teams/{id}/members', added, 201);
      const userId = added.body.data.id as string;
      conforms('post', '/teams/{id}/members', await add({ user_id: userId }), 200);
      conforms('post', '/teams/{id}/members', await add({}), 400);
      conforms('post', '/teams/{id}/members', await add({ email: 'nobody@example.test' }), 404);
      conforms('post', '/teams/{id}/members', await add({ user_id: userId }, stack.inferenceKey), 403);
      conforms('post', '/teams/{id}/members', await add({ user_id: userId }, generateKey()), 401);
      conforms('get', '/teams/{id}/members', await stack.api(list, { key: m }), 200);
      conforms('get', '/teams/{id}/members', await stack.api('/teams/nope/members', { key: m }), 400);
      conforms(
        'get',
        '/teams/{id}/members',
        await stack.api(`/teams/${randomUUID()}/members`, { key: m }),
        404,
      );
      conforms('get', '/teams/{id}/members', await stack.api(list, { key: stack.inferenceKey }), 403);
      conforms('get', '/teams/{id}/members', await stack.api(list, {}), 401);
      const del = (path: string, key = m) => stack.api(path, { key, method: 'DELETE' });
      const one = `${list}/${userId}`;
      conforms('delete', '/teams/{id}/members/{user_id}', await del(one, stack.inferenceKey), 403);
      conforms('delete', '/teams/{id}/members/{user_id}', await del(one, generateKey()), 401);
      conforms('delete', '/teams/{id}/members/{user_id}', await del(one), 200);
      conforms('delete', '/teams/{id}/members/{user_id}', await del(one), 404);
      conforms('delete', '/teams/{id}/members/{user_id}', await del(`${list}/nope`), 400);
    });

    it('answers GET /key and GET /credits for both scopes in the documented shape', async () => {
      for (const key of [stack.account.managementKey, stack.inferenceKey]) {
        conforms('get', '/key', await stack.api('/key', { key }), 200);
        conforms('get', '/credits', await stack.api('/credits', { key }), 200);
      }
      conforms('get', '/key', await stack.api('/key', { key: generateKey() }), 401);
      conforms('get', '/credits', await stack.api('/credits', {}), 401);
    });

    it('answers GET /activity for a management key in the documented (OpenRouter) shape', async () => {
      // A request recorded yesterday (today is not a completed day).
      const yesterday = new Date(Date.now() - 86_400_000).toISOString();
      await stack.services.billing.recorder.record([
        usageEvent({ account_id: stack.account.id, key_id: stack.inferenceKeyId, finished_at: yesterday }),
      ]);
      const key = stack.account.managementKey;
      const ok = await stack.api('/activity', { key });
      conforms('get', '/activity', ok, 200);
      expect(ok.body.data, describeResponse(ok)).toEqual([
        expect.objectContaining({ date: yesterday.slice(0, 10), model: MODEL, requests: 1, usage: 0.001 }),
      ]);
      conforms('get', '/activity', await stack.api('/activity?date=2020-01-01', { key }), 400);
      conforms('get', '/activity', await stack.api('/activity', { key: stack.inferenceKey }), 403);
      conforms('get', '/activity', await stack.api('/activity', { key: generateKey() }), 401);
    });

    it('answers GET /audit for a management key in the documented shape', async () => {
      const key = stack.account.managementKey;
      const made = await stack.createInferenceKey(key, { name: 'openapi audited' });
      const ok = await stack.api(`/audit?target_id=${made.hash}`, { key });
      conforms('get', '/audit', ok, 200);
      expect(ok.body.data, describeResponse(ok)).toEqual([
        expect.objectContaining({ action: 'key.create', target: { kind: 'key', id: made.hash } }),
      ]);
      // Billing's entries too (the stack's credits, granted by the admin CLI's route).
      const all = await stack.api('/audit?limit=500', { key });
      conforms('get', '/audit', all, 200);
      expect(all.body.data, describeResponse(all)).toContainEqual(
        expect.objectContaining({ source: 'billing', action: 'credits.grant' }),
      );
      conforms('get', '/audit', await stack.api('/audit?limit=0', { key }), 400);
      conforms('get', '/audit', await stack.api('/audit?before=12', { key }), 400);
      conforms('get', '/audit', await stack.api('/audit', { key: stack.inferenceKey }), 403);
      conforms('get', '/audit', await stack.api('/audit', { key: generateKey() }), 401);
    });
  });

  it('documents 429 and the X-RateLimit-* headers of a key over its request rate limit, on every secured route', async () => {
    // An inference key with a limit: its answers carry the X-RateLimit-* headers.
    const limited = await stack.createInferenceKey(stack.account.managementKey, {
      name: 'openapi rate limited',
      rate_limit_rpm: 5,
    });
    const first = await stack.api('/chat/completions', { key: limited.key, body: chat() });
    conforms('post', '/chat/completions', first, 200);
    expect(first.headers.get('x-ratelimit-limit')).toBe('5');
    expect(first.headers.get('x-ratelimit-remaining')).toBe('4');
    expect(Number(first.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() - 1000);
    // A management key limited to one request a minute: after one, every secured route is 429 (the
    // limit is checked at authentication, before the route's own scope check).
    const { key } = await stack.services.keys.runtime.keys.create(stack.account.id, {
      name: 'openapi rate limited ops',
      scope: 'management',
      governance: { rateLimitRpm: 1 },
    });
    expect((await stack.api('/key', { key })).status).toBe(200);
    for (const { method, path, operation } of documentedOperations()) {
      if (operation['x-required-scope'] === 'none') continue;
      const concrete = path.replace('{hash}', randomUUID()).replace('{author}/{slug}', MODEL);
      const body = method === 'post' || method === 'patch' ? {} : undefined;
      const res = await request(stack.origin, method, concrete, key, body);
      conforms(method, path, res, 429);
      if (operation['x-error-shape'] === 'anthropic')
        expect(res.body.error, describeResponse(res)).toMatchObject({ type: 'rate_limit_error' });
      else
        expect(res.body.error.metadata, describeResponse(res)).toMatchObject({
          error_type: 'rate_limited',
          limit: 1,
          interval: '1m',
        });
      expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
    }
  });

  it('documents 503 on every secured route when the key store cannot be reached', async () => {
    const cut = await startProxy(
      loadProxyConfig({
        ...stack.infraEnv(),
        KEYS_URL: 'http://127.0.0.1:9',
        BILLING_URL: 'http://127.0.0.1:9',
        SERVICE_TIMEOUT_MS: '1000',
      }),
      { catalog: stack.catalog },
    );
    try {
      const key = generateKey(); // never seen: the proxy must ask the (unreachable) keys service
      for (const { method, path, operation } of documentedOperations()) {
        if (operation['x-required-scope'] === 'none') continue;
        const body = method === 'post' || method === 'patch' ? {} : undefined;
        const concrete = path.replace('{hash}', randomUUID()).replace('{author}/{slug}', MODEL);
        const res = await request(cut.url, method, concrete, key, body);
        // Anthropic's clients retry its 529 overloaded_error (the Messages routes).
        conforms(method, path, res, operation['x-error-shape'] === 'anthropic' ? 529 : 503);
      }
    } finally {
      await cut.close();
    }
  });

  it('was exercised on every documented status of every operation', () => {
    const missing: string[] = [];
    for (const { method, path, operation } of documentedOperations()) {
      const seen = checker.seen.get(operation.operationId) ?? new Set();
      for (const status of Object.keys(operation.responses).filter((s) => s !== 'default')) {
        if (!seen.has(status)) missing.push(`${method.toUpperCase()} ${path} ${status}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
