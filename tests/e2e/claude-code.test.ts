/**
 * The real Claude Code CLI through the gateway's Anthropic Messages door (the whole stack
 * in-process): a task that needs its Bash tool — the provider simulator scripts a `tool_use` of Bash
 * (tool scripts, services/provider-sim), Claude Code runs the command and sends the result back, and
 * the final answer carries the command's output — once through an Anthropic-format model (native)
 * and once through an OpenAI-format model (translated). Then a key with a small limit: the session
 * stops with an error Claude Code shows, and the key's recorded spend stays within its limit with
 * several sessions at once.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runClaudeCode } from '../support/claude-code';
import { describeResponse, type Stack, startStack } from '../support/stack';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

const TASK = 'Run this for me. <sim:call name="Bash">{"command":"echo tollgate-$((6*7))"}</sim:call>';

describe.each([
  ['an Anthropic-format model (native)', 'anthropic/claude-sonnet-4.5'],
  ['an OpenAI-format model (translated)', 'openai/gpt-4o-mini'],
])('Claude Code through %s', (_name, model) => {
  it('completes a task with its Bash tool: the answer carries the command output', async () => {
    const key = await stack.createInferenceKey(stack.account.managementKey, { name: `claude-${model}` });
    const run = await runClaudeCode({ origin: stack.origin, apiKey: key.key, model, prompt: TASK });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    // "tollgate-42": the shell computed it, so the tool really ran and its output came back.
    expect(run.stdout).toContain('Tool output: tollgate-42');
    const usage = await stack.api('/key', { key: key.key });
    expect(usage.status, describeResponse(usage)).toBe(200);
  });
});

/**
 * Claude Code's first request of TASK, as it sends it (recorded by a one-off server that answers 402,
 * so the CLI stops at once): headers and body.
 */
async function recordFirstRequest(model: string): Promise<{ headers: Record<string, string>; body: string }> {
  let seen: { headers: Record<string, string>; body: string } | null = null;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => {
      body += d.toString('utf8');
    });
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const h of ['anthropic-version', 'anthropic-beta', 'x-claude-code-session-id', 'content-type'])
        if (typeof req.headers[h] === 'string') headers[h] = req.headers[h] as string;
      seen ??= { headers, body };
      res.writeHead(402, { 'content-type': 'application/json' });
      res.end('{"type":"error","error":{"type":"billing_error","message":"recorded"}}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const { port } = server.address() as AddressInfo;
    await runClaudeCode({ origin: `http://127.0.0.1:${port}`, apiKey: 'sk-record', model, prompt: TASK });
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
  if (!seen) throw new Error('Claude Code sent no request');
  return seen;
}

/** A new key with `limit`; true when the gateway admits `request` with it (false: 402 billing_error). */
async function admits(limit: number, request: { headers: Record<string, string>; body: string }) {
  const key = await stack.createInferenceKey(stack.account.managementKey, { name: 'probe', limit });
  const res = await fetch(`${stack.baseUrl}/messages`, {
    method: 'POST',
    headers: { ...request.headers, authorization: `Bearer ${key.key}` },
    body: request.body,
  });
  const text = await res.text();
  if (res.status !== 200 && res.status !== 402) throw new Error(`probe: HTTP ${res.status} ${text}`);
  return { admitted: res.status === 200, id: res.headers.get('x-generation-id') };
}

describe('a key with a small spend limit', () => {
  const model = 'anthropic/claude-sonnet-4.5';

  it('stops the session with a 402 error Claude Code shows its user', async () => {
    const small = await stack.createInferenceKey(stack.account.managementKey, { name: 'tiny', limit: 0.01 });
    const run = await runClaudeCode({ origin: stack.origin, apiKey: small.key, model, prompt: TASK });
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toMatch(/API Error: 402 .*spend limit/);
  });

  it('keeps the recorded spend within the limit with several sessions at once, each stopped by a 402 it shows', async () => {
    // The limit: just above the worst case of the session's first request (found by bisection with
    // Claude Code's own first request), so the first request fits, and after its cost no second one
    // (a longer prompt, so a larger worst case) can.
    const first = await recordFirstRequest(model);
    let lo = 0;
    let hi = 5;
    let served: string | null = null;
    for (let i = 0; i < 14; i++) {
      const mid = Math.round(((lo + hi) / 2) * 1e6) / 1e6; // limits have at most 10 decimal places
      const probe = await admits(mid, first);
      if (probe.admitted) {
        hi = mid;
        served = probe.id;
      } else lo = mid;
    }
    expect(served).not.toBeNull();
    const record = await stack.waitForGeneration(served as string);
    const cost = record.body.data.total_cost as number;
    expect(cost).toBeGreaterThan(0);
    const limit = Math.round((hi + cost / 2) * 1e6) / 1e6;

    const key = await stack.createInferenceKey(stack.account.managementKey, { name: 'sessions', limit });
    const runs = await Promise.all(
      Array.from({ length: 4 }, () =>
        runClaudeCode({ origin: stack.origin, apiKey: key.key, model, prompt: TASK }),
      ),
    );
    for (const run of runs) {
      expect(run.code, run.stdout).not.toBe(0);
      expect(run.stdout + run.stderr).toMatch(/API Error: 402 .*spend limit/);
    }
    // Billing records what was served; the key's spend never passes its limit.
    await vi.waitFor(
      async () => {
        const k = await stack.api('/key', { key: key.key });
        expect(k.body.data.usage, describeResponse(k)).toBeGreaterThan(0);
      },
      { timeout: 15_000, interval: 200 },
    );
    const k = await stack.api('/key', { key: key.key });
    expect(k.body.data.usage).toBeLessThanOrEqual(limit);
  }, 120_000);
});
