/**
 * The agent clients the Responses door serves, against the provider simulator's own /v1/responses
 * (the upstream the door passes through to): the real Codex CLI runs its shell tool on the
 * simulator's scripted call and answers with the output; the Agents SDK and the AI SDK's default
 * OpenAI provider complete a function-tool round trip. The same clients through the gateway:
 * responses-door.test.ts.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { Agent, OpenAIProvider, Runner, tool } from '@openai/agents';
import { type ProviderSim, startProviderSim } from '@tollgate/provider-sim';
import { tool as aiTool, generateText, jsonSchema, stepCountIs } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCodex } from '../support/codex';

let sim: ProviderSim;
beforeAll(async () => {
  sim = await startProviderSim({ apiKey: 'sk-sim' });
});
afterAll(() => sim.close());

const call = (name: string, args: object) => `<sim:call name="${name}">${JSON.stringify(args)}</sim:call>`;

describe('agent clients against the simulator (/v1/responses)', () => {
  it('the Codex CLI runs the scripted shell command and answers with its output', async () => {
    const run = await runCodex({
      baseUrl: sim.baseUrl,
      apiKey: 'sk-sim',
      model: 'gpt-4o-mini',
      prompt: `Run the command. ${call('exec_command', { cmd: 'echo tollgate-codex-ok' })}`,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.lastMessage).toContain('Tool output:');
    expect(run.lastMessage).toContain('tollgate-codex-ok');
  });

  it('the Agents SDK runs an agent with one function tool to its final output', async () => {
    const seen: string[] = [];
    const weather = tool({
      name: 'get_weather',
      description: 'Weather of a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
        additionalProperties: false,
      },
      strict: true,
      execute: async (input) => {
        seen.push((input as { city: string }).city);
        return 'sunny, 21 C';
      },
    });
    const agent = new Agent({
      name: 'forecaster',
      instructions: 'Use the tool.',
      model: 'gpt-4o-mini',
      tools: [weather],
    });
    const runner = new Runner({
      modelProvider: new OpenAIProvider({
        openAIClient: new OpenAI({ baseURL: sim.baseUrl, apiKey: 'sk-sim', maxRetries: 0 }),
      }),
      tracingDisabled: true,
    });
    const result = await runner.run(agent, `Weather in Paris? ${call('get_weather', { city: 'Paris' })}`);
    expect(seen).toEqual(['Paris']);
    expect(result.finalOutput).toBe('Tool output: sunny, 21 C');
  });

  it("the AI SDK's default OpenAI provider (Responses) completes a tool call", async () => {
    const openai = createOpenAI({ baseURL: sim.baseUrl, apiKey: 'sk-sim' });
    const result = await generateText({
      model: openai('gpt-4o-mini'),
      prompt: `Weather in Oslo? ${call('get_weather', { city: 'Oslo' })}`,
      tools: {
        get_weather: aiTool({
          inputSchema: jsonSchema<{ city: string }>({
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
          }),
          execute: async ({ city }) => `${city}: snow`,
        }),
      },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    expect(result.text).toBe('Tool output: Oslo: snow');
  });
});
