/**
 * Issue 28, opt-in bodies through the whole stack with the official `openai` client: a key with
 * `store_bodies` has the prompt and the answer of its requests kept (streamed and not), with the
 * default patterns (API keys, e-mail addresses) redacted before they leave the proxy; a key without it
 * (the default) has nothing kept; the account's switch (`PATCH /account`, audited) keeps the bodies
 * of a key without its own flag while on, and not once off. The bodies reach the dashboard's read of the generation; the public
 * `GET /generation` has no such field.
 */

import Anthropic from '@anthropic-ai/sdk';
import { createServiceSigner, SERVICE_TOKEN_HEADER } from '@tollgate/auth';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeResponse, MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close(), 120_000);

const SECRET = `sk-proj-${'Q'.repeat(32)}`;
const EMAIL = 'ana.lopez@example.com';
const PROMPT = `My key is ${SECRET} and my mail ${EMAIL}; say hello`;

const clientOf = (key: string) => new OpenAI({ baseURL: stack.baseUrl, apiKey: key, maxRetries: 0 });

async function keptRows(id: string) {
  return stack.services.billing.db
    .selectFrom('billing.generation_bodies')
    .select(['prompt', 'answer', 'truncated'])
    .where('id', '=', id)
    .execute();
}

/** The generation as the dashboard reads it (billing's internal route, the dashboard's service token). */
async function dashboardRead(id: string) {
  const signer = createServiceSigner('dashboard', stack.serviceKeys.dashboard.privateKey);
  const res = await fetch(
    `${stack.services.billing.url}/internal/accounts/${stack.account.id}/generations/${id}`,
    { headers: { [SERVICE_TOKEN_HEADER]: await signer.sign('billing') } },
  );
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { bodies: unknown } }).data;
}

describe('opt-in bodies', () => {
  it('keeps the prompt and the answer of a key with store_bodies, redacted (non-streamed)', async () => {
    const key = await stack.createInferenceKey(stack.account.managementKey, {
      name: 'keeps',
      store_bodies: true,
    });
    expect((key.body as { data: { store_bodies: boolean } }).data.store_bodies).toBe(true);
    const completion = await clientOf(key.key).chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: PROMPT }],
      max_tokens: 16,
    });
    const text = completion.choices[0]?.message.content ?? '';
    expect(text.length).toBeGreaterThan(0);
    const pub = await stack.waitForGeneration(completion.id, key.key);
    expect(pub.status, describeResponse(pub)).toBe(200);
    expect(pub.body.data).not.toHaveProperty('bodies');
    const [row] = await keptRows(completion.id);
    expect(row).toBeDefined();
    expect(row?.prompt).toContain('My key is [REDACTED] and my mail [REDACTED]; say hello');
    expect(row?.prompt).not.toContain(SECRET);
    expect(row?.prompt).not.toContain(EMAIL);
    expect(JSON.parse(row?.prompt ?? '')).toMatchObject({ model: MODEL, max_tokens: 16 });
    expect(row?.answer).toBe(text);
    expect(row?.truncated).toBe(false);
    expect(await dashboardRead(completion.id)).toMatchObject({
      bodies: { prompt: row?.prompt, answer: text, truncated: false },
    });
  });

  it('keeps the streamed answer’s text, as the client read it', async () => {
    const key = await stack.createInferenceKey(stack.account.managementKey, { name: 'keeps-stream' });
    const patched = await stack.api(`/keys/${key.hash}`, {
      key: stack.account.managementKey,
      method: 'PATCH',
      body: { store_bodies: true },
    });
    expect(patched.status, describeResponse(patched)).toBe(200);
    expect(patched.body.data.store_bodies).toBe(true);
    const stream = await clientOf(key.key).chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: `${PROMPT} (streamed)` }],
      stream: true,
      max_tokens: 24,
    });
    let id = '';
    let text = '';
    for await (const chunk of stream) {
      id = chunk.id;
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text.length).toBeGreaterThan(0);
    const pub = await stack.waitForGeneration(id, key.key);
    expect(pub.status, describeResponse(pub)).toBe(200);
    const [row] = await keptRows(id);
    expect(row?.prompt).toContain('[REDACTED] and my mail [REDACTED]; say hello (streamed)');
    expect(row?.prompt).not.toContain(SECRET);
    expect(row?.answer).toBe(text);
  });

  it('keeps nothing for a key without it (the default), streamed or not', async () => {
    const key = await stack.createInferenceKey(stack.account.managementKey, { name: 'default' });
    expect((key.body as { data: { store_bodies: boolean } }).data.store_bodies).toBe(false);
    const client = clientOf(key.key);
    const plain = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: PROMPT }],
      max_tokens: 8,
    });
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: PROMPT }],
      stream: true,
      max_tokens: 8,
    });
    let streamedId = '';
    for await (const chunk of stream) streamedId = chunk.id;
    for (const id of [plain.id, streamedId]) {
      const pub = await stack.waitForGeneration(id, key.key);
      expect(pub.status, describeResponse(pub)).toBe(200);
      expect(await keptRows(id)).toEqual([]);
      expect(await dashboardRead(id)).toMatchObject({ bodies: null });
    }
  });

  it('refuses a store_bodies that is not a boolean with 400 naming the field', async () => {
    const res = await stack.api('/keys', {
      key: stack.account.managementKey,
      method: 'POST',
      body: { name: 'bad', store_bodies: 'yes' },
    });
    expect(res.status, describeResponse(res)).toBe(400);
    expect(res.body.error.message).toMatch(/store_bodies/);
  });

  it.each([
    ['native (Anthropic-format provider)', 'anthropic/claude-sonnet-4.5'],
    ['translated (OpenAI-format provider)', 'openai/gpt-4o-mini'],
  ])('keeps a Messages stream’s text through the Anthropic SDK, %s', async (_name, model) => {
    const key = await stack.createInferenceKey(stack.account.managementKey, {
      name: `keeps-messages-${model}`,
      store_bodies: true,
    });
    const anthropic = new Anthropic({
      baseURL: `${stack.origin}/api`,
      apiKey: null,
      authToken: key.key,
      maxRetries: 0,
    });
    const { data: stream, response } = await anthropic.messages
      .stream({ model, max_tokens: 32, messages: [{ role: 'user', content: PROMPT }] })
      .withResponse();
    const final = await stream.finalMessage();
    const text = final.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    expect(text.length).toBeGreaterThan(0);
    const id = response.headers.get('x-generation-id') as string;
    const pub = await stack.waitForGeneration(id, key.key);
    expect(pub.status, describeResponse(pub)).toBe(200);
    const [row] = await keptRows(id);
    expect(row?.prompt).toContain('My key is [REDACTED] and my mail [REDACTED]; say hello');
    expect(row?.answer).toBe(text);
  });

  it.each([
    ['an OpenAI-format model', MODEL],
    ['a provider serving the Responses API itself', 'openai/gpt-5.1-codex'],
  ])('keeps a Responses stream’s text through the openai SDK, %s', async (_name, model) => {
    const key = await stack.createInferenceKey(stack.account.managementKey, {
      name: `keeps-responses-${model}`,
      store_bodies: true,
    });
    const stream = clientOf(key.key).responses.stream({ model, input: PROMPT, max_output_tokens: 32 });
    let text = '';
    for await (const e of stream) if (e.type === 'response.output_text.delta') text += e.delta;
    const final = await stream.finalResponse();
    expect(text.length).toBeGreaterThan(0);
    const pub = await stack.waitForGeneration(final.id, key.key);
    expect(pub.status, describeResponse(pub)).toBe(200);
    const [row] = await keptRows(final.id);
    expect(row?.prompt).toContain('My key is [REDACTED] and my mail [REDACTED]; say hello');
    expect(row?.answer).toBe(text);
  });

  it('the account switch keeps the bodies of a key without its own flag while on, and not once off', async () => {
    const management = stack.account.managementKey;
    // A key whose record is cached before the switch: the switch must reach the cached record.
    const key = await stack.createInferenceKey(management, { name: 'account-wide' });
    expect((key.body as { data: { store_bodies: boolean } }).data.store_bodies).toBe(false);
    const ask = async (content: string) => {
      const c = await clientOf(key.key).chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content }],
        max_tokens: 8,
      });
      expect((await stack.waitForGeneration(c.id, key.key)).status).toBe(200);
      return c;
    };
    const before = await ask(`before: ${PROMPT}`);
    expect(await keptRows(before.id)).toEqual([]);
    expect((await stack.api('/account', { key: management })).body.data).toEqual({
      id: stack.account.id,
      slug: expect.any(String),
      name: expect.any(String),
      store_bodies: false,
    });

    const on = await stack.api('/account', {
      key: management,
      method: 'PATCH',
      body: { store_bodies: true },
    });
    expect(on.status, describeResponse(on)).toBe(200);
    expect(on.body.data.store_bodies).toBe(true);
    const kept = await ask(`while on: ${PROMPT}`);
    const [row] = await keptRows(kept.id);
    expect(row?.prompt).toContain('while on: My key is [REDACTED] and my mail [REDACTED]; say hello');
    expect(row?.answer).toBe(kept.choices[0]?.message.content);
    // The key's own flag is untouched: the account's switch is its own setting.
    const read = await stack.api(`/keys/${key.hash}`, { key: management });
    expect(read.body.data.store_bodies).toBe(false);

    const off = await stack.api('/account', {
      key: management,
      method: 'PATCH',
      body: { store_bodies: false },
    });
    expect(off.status, describeResponse(off)).toBe(200);
    expect(off.body.data.store_bodies).toBe(false);
    const after = await ask(`after: ${PROMPT}`);
    expect(await keptRows(after.id)).toEqual([]);

    // Both changes are in the audit log, by the management key.
    const audit = await stack.api('/audit?action=account.update', { key: management });
    expect(audit.status, describeResponse(audit)).toBe(200);
    const entries = (audit.body.data as Array<Record<string, unknown>>).slice(0, 2);
    expect(entries).toMatchObject([
      {
        action: 'account.update',
        actor: { kind: 'management_key' },
        target: { kind: 'account', id: stack.account.id },
        before: { store_bodies: true },
        after: { store_bodies: false },
      },
      { action: 'account.update', before: { store_bodies: false }, after: { store_bodies: true } },
    ]);
  });

  it('refuses a bad account change with 400 naming the field, and an inference key with 403', async () => {
    const management = stack.account.managementKey;
    for (const body of [{ store_bodies: 'yes' }, { store_bodies: true, name: 'x' }]) {
      const res = await stack.api('/account', { key: management, method: 'PATCH', body });
      expect(res.status, describeResponse(res)).toBe(400);
      expect(res.body.error.message).toMatch(/store_bodies|name/);
    }
    const res = await stack.api('/account', {
      key: stack.inferenceKey,
      method: 'PATCH',
      body: { store_bodies: true },
    });
    expect(res.status, describeResponse(res)).toBe(403);
    expect((await stack.api('/account', { key: management })).body.data.store_bodies).toBe(false);
  });
});
