import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type ProxyStack, startProxyStack } from '../../../test/stack';

// The proxy never serves a billable request whose usage event could be neither confirmed by RabbitMQ
// nor written to the disk spool: here the broker is unreachable and the spool directory unwritable.
let stack: ProxyStack;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-proxy-spool-'));
  writeFileSync(join(dir, 'file'), 'not a directory');
  stack = await startProxyStack({
    env: { AMQP_URL: 'amqp://guest:guest@127.0.0.1:1', SPOOL_DIR: join(dir, 'file', 'spool') },
  });
});
afterAll(async () => {
  await stack?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('usage durability at admission', () => {
  it('answers 503 service_unavailable instead of serving an unbillable request, other routes unaffected', async () => {
    const res = await fetch(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: { ...bearer(stack.inference), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(503);
    const body = (await res.json()) as { error: { message: string; metadata: { error_type: string } } };
    expect(body.error.metadata.error_type).toBe('service_unavailable');
    expect(body.error.message).toMatch(/Usage recording is unavailable/);
    expect(stack.upstreamRequests).toBe(0);
    expect((await fetch(`${stack.api}/models`, { headers: bearer(stack.inference) })).status).toBe(200);
  });
});
