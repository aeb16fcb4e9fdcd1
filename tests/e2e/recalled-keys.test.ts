/**
 * The chat route's checked admission of recalled key records (services/proxy/src/auth/authenticate.ts,
 * docs/architecture.md "Round trips"): after a key's first request, its chat requests cost one Redis
 * script call before the provider (the admission, which checks the record's version and counts the
 * rate limit), and every change to the key still takes effect on its very next request.
 */

import { connect } from 'node:net';
import { digestKey } from '@tollgate/auth';
import { lastUsedHashKey } from '@tollgate/key-cache';
import { spendKeyHash } from '@tollgate/spend';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { describeResponse, MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ credits: '100' });
});
afterAll(() => stack?.close());

const mgmt = () => stack.account.managementKey;
const chat = (key: string, body: Record<string, unknown> = {}) =>
  stack.api('/chat/completions', {
    key,
    body: { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, ...body },
  });
const patch = (hash: string, body: Record<string, unknown>) =>
  stack.api(`/keys/${hash}`, { key: mgmt(), method: 'PATCH', body });

/**
 * The Redis commands sent while `fn` runs that name this key's cache entry (`cache`: the key-cache
 * read, `cache+spend`: the checked admission) or only its spend hash (`spend`: an unchecked admission,
 * the settle, billing's commit), from MONITOR.
 */
async function commandsFor(
  key: { key: string; hash: string },
  fn: () => Promise<unknown>,
): Promise<string[]> {
  const digest = digestKey(key.key);
  const spend = `"${spendKeyHash(stack.infra.redis.prefix, stack.account.id, key.hash)}"`;
  const { hostname, port } = new URL(stack.infra.redis.url);
  // A raw MONITOR connection: one line per command Redis runs ("+<time> [db addr] "cmd" "arg" …").
  const socket = connect(Number(port || 6379), hostname);
  const seen: string[] = [];
  let rest = '';
  socket.on('data', (chunk: Buffer) => {
    const lines = (rest + chunk.toString('utf8')).split('\r\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      if (line.includes('[0 lua]')) continue; // commands run inside a script: the script call counts
      const cache = line.includes(`key:{${digest}}`);
      const spends = line.includes(spend);
      if (cache || spends) seen.push(cache && spends ? 'cache+spend' : cache ? 'cache' : 'spend');
    }
  });
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write('MONITOR\r\n');
  try {
    await new Promise((r) => setTimeout(r, 100));
    await fn();
    await new Promise((r) => setTimeout(r, 200)); // the settle after the answer
  } finally {
    socket.destroy();
  }
  return seen;
}

describe('recalled key records (checked admission)', () => {
  it('after the first request, a chat request costs one script call before the provider and one settle', async () => {
    const key = await stack.createInferenceKey(mgmt(), { name: 'recalled', limit: 10, limit_reset: 'daily' });
    const first = await commandsFor(key, async () => {
      const r = await chat(key.key);
      expect(r.status, describeResponse(r)).toBe(200);
    });
    // The first: the key-cache read (+ rate count; a new key's entry may be filled first), then an
    // admission that checks nothing.
    expect(first).toContain('cache');
    expect(first).not.toContain('cache+spend');
    for (let i = 0; i < 3; i++) {
      const later = await commandsFor(key, async () => {
        const r = await chat(key.key);
        expect(r.status, describeResponse(r)).toBe(200);
      });
      // No key-cache read: one admission that checks the record and counts the request.
      expect(later.filter((c) => c !== 'spend')).toEqual(['cache+spend']);
    }
  });

  it('a key disabled, re-enabled or revoked after it was recalled: its very next request sees it', async () => {
    const key = await stack.createInferenceKey(mgmt(), { name: 'toggled after recall' });
    expect((await chat(key.key)).status).toBe(200);
    expect((await chat(key.key)).status).toBe(200); // served from the recalled record
    expect((await patch(key.hash, { disabled: true })).status).toBe(200);
    const off = await chat(key.key);
    expect(off.status, describeResponse(off)).toBe(401);
    expect(off.body.error.message).toContain('disabled');
    expect((await patch(key.hash, { disabled: false })).status).toBe(200);
    expect((await chat(key.key)).status).toBe(200);
    expect((await chat(key.key)).status).toBe(200);
    expect((await stack.api(`/keys/${key.hash}`, { key: mgmt(), method: 'DELETE' })).status).toBe(200);
    const revoked = await chat(key.key);
    expect(revoked.status, describeResponse(revoked)).toBe(401);
    expect(revoked.body.error.message).toContain('revoked');
  });

  it('a request of a key revoked since it was recalled records no use (last_used_at)', async () => {
    const key = await stack.createInferenceKey(mgmt(), { name: 'no use after revoke' });
    expect((await chat(key.key)).status).toBe(200);
    expect((await chat(key.key)).status).toBe(200); // served from the recalled record
    // Past the proxy's once-a-second throttle of last-use writes for this key.
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await stack.api(`/keys/${key.hash}`, { key: mgmt(), method: 'DELETE' })).status).toBe(200);
    const revokedAt = Date.now();
    const r = await chat(key.key);
    expect(r.status, describeResponse(r)).toBe(401);
    await new Promise((r) => setTimeout(r, 100)); // the write is fire-and-forget
    const hashKey = lastUsedHashKey(stack.infra.redis.prefix, key.hash);
    const written = await stack.infra.redis.client.hget(hashKey, key.hash);
    expect(written === null || Number(written) < revokedAt, `last use written at ${written}`).toBe(true);
  });

  it('a bad request of a key revoked since it was recalled is answered 401, not 400', async () => {
    const key = await stack.createInferenceKey(mgmt(), { name: 'revoked then bad body' });
    expect((await chat(key.key)).status).toBe(200);
    expect((await stack.api(`/keys/${key.hash}`, { key: mgmt(), method: 'DELETE' })).status).toBe(200);
    const r = await chat(key.key, { model: 'no/such-model' });
    expect(r.status, describeResponse(r)).toBe(401);
    // And a bad request of a valid recalled key is the 400 it always was.
    const valid = await stack.createInferenceKey(mgmt(), { name: 'valid, bad body' });
    expect((await chat(valid.key)).status).toBe(200);
    const bad = await chat(valid.key, { model: 'no/such-model' });
    expect(bad.status, describeResponse(bad)).toBe(400);
  });

  it('allowed_models changed after the key was recalled applies to its very next request, both ways', async () => {
    const key = await stack.createInferenceKey(mgmt(), {
      name: 'models changed',
      allowed_models: ['anthropic/*'],
    });
    const refused = await chat(key.key);
    expect(refused.status, describeResponse(refused)).toBe(403);
    expect((await patch(key.hash, { allowed_models: [] })).status).toBe(200);
    expect((await chat(key.key)).status).toBe(200); // a 403 of the recalled record is decided again
    expect((await chat(key.key)).status).toBe(200);
    expect((await patch(key.hash, { allowed_models: ['anthropic/*'] })).status).toBe(200);
    const again = await chat(key.key);
    expect(again.status, describeResponse(again)).toBe(403);
    expect(again.body.error.metadata.error_type).toBe('forbidden');
  });

  it('a limit lowered after the key was recalled applies to its very next request', async () => {
    const key = await stack.createInferenceKey(mgmt(), {
      name: 'limit lowered',
      limit: 10,
      limit_reset: 'daily',
    });
    expect((await chat(key.key)).status).toBe(200);
    expect((await chat(key.key)).status).toBe(200);
    expect((await patch(key.hash, { limit: 0.0000001 })).status).toBe(200);
    const r = await chat(key.key);
    expect(r.status, describeResponse(r)).toBe(403);
    expect(r.body.error.metadata.error_type).toBe('key_limit_exceeded');
  });

  it('counts every request once against rate_limit_rpm, with the headers, and holds nothing for a 429', async () => {
    const key = await stack.createInferenceKey(mgmt(), {
      name: 'rate limited',
      limit: 10,
      limit_reset: 'daily',
    });
    expect((await chat(key.key)).status).toBe(200); // recalled from here on
    expect((await patch(key.hash, { rate_limit_rpm: 3 })).status).toBe(200);
    const statuses: number[] = [];
    let last = null as Awaited<ReturnType<typeof chat>> | null;
    for (let i = 0; i < 5; i++) {
      last = await chat(key.key);
      statuses.push(last.status);
      if (last.status === 200) expect(last.headers.get('x-ratelimit-limit')).toBe('3');
    }
    // The window may have started before the PATCH (the first request counted in it too).
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(2);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(3);
    expect(statuses.slice(-2)).toEqual([429, 429]);
    expect(last?.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(last?.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(last?.body.error.metadata.error_type).toBe('rate_limited');
    // No reservation (r:) is left behind by the refused requests (the served ones were settled).
    await vi.waitFor(async () => {
      const fields = await stack.infra.redis.client.hkeys(
        spendKeyHash(stack.infra.redis.prefix, stack.account.id, key.hash),
      );
      expect(fields.filter((f) => f.startsWith('r:'))).toEqual([]);
    });
  });
});
