import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProviderSim, startProviderSim } from '../http/app';

let sim: ProviderSim;
beforeAll(async () => {
  sim = await startProviderSim({ apiKey: 'sk-sim' });
});
afterAll(() => sim.close());

const send = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${sim.baseUrl}/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: 'Bearer sk-sim',
      'anthropic-version': '2023-06-01',
      ...headers,
    },
    body: JSON.stringify(body),
  });

describe('Anthropic mode: what Claude Code sends', () => {
  it('accepts system turns (with anthropic-beta), context_management, output_config and adaptive thinking', async () => {
    const res = await send(
      {
        model: 'claude-sonnet-4',
        max_tokens: 32000,
        thinking: { type: 'adaptive', display: 'omitted' },
        context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
        output_config: { effort: 'high' },
        metadata: { user_id: '{"session_id":"s"}' },
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'system', content: 'a reminder' },
          { role: 'user', content: 'again' },
        ],
      },
      { 'anthropic-beta': 'context-management-2025-06-27' },
    );
    expect(res.status, await res.clone().text()).toBe(200);
  });

  it('still refuses a system turn without anthropic-beta, as the plain API does', async () => {
    const res = await send({ model: 'm', max_tokens: 5, messages: [{ role: 'system', content: 'x' }] });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/role/);
  });
});
