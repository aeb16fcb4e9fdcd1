import type { ServerResponse } from 'node:http';
import { sampleInput } from '../anthropic/messages.tokens';
import { promptSeed } from '../completion/generator';
import { countPromptTokens } from '../completion/prompt-tokens';
import type { CompletionRequest } from '../completion/request';
import { callId, type ScriptTurn, scriptTokens, type ToolScript, textOf, toolScript } from './tool-script';

/**
 * Scripted answers of `POST /v1/chat/completions` (tool-script.ts): `tool_calls` with finish_reason
 * `tool_calls`, or the text answer carrying the tool output. Streamed as OpenAI streams them: a role
 * chunk, per call a chunk with id and name then its arguments in pieces, the finish chunk, the usage
 * chunk (with `include_usage`), `[DONE]`.
 */

type Json = Record<string, unknown>;

/**
 * The script of a chat request, or null: scripted tool calls, else — for `response_format` with a
 * JSON schema — an answer that is a JSON value of the schema (like structured outputs; the values are
 * `sampleInput`'s: enums' first value, words, small integers).
 */
export function chatScript(req: CompletionRequest): ToolScript | null {
  const calls = toolsScript(req);
  if (calls !== null || req.responseSchema === undefined) return calls;
  return { kind: 'answer', text: JSON.stringify(sampleInput(req.responseSchema, promptSeed(req.messages))) };
}

function toolsScript(req: CompletionRequest): ToolScript | null {
  if (req.tools.length === 0) return null;
  const turns: ScriptTurn[] = [];
  for (const m of req.messages) {
    if (m.role === 'user') turns.push({ role: 'user', text: textOf(m.content) });
    else if (m.role === 'assistant') turns.push({ role: 'assistant', text: textOf(m.content) });
    else if (m.role === 'tool' || m.role === 'function')
      turns.push({ role: 'tool', text: textOf(m.content) });
  }
  return toolScript(turns, req.tools);
}

function usageOf(req: CompletionRequest, script: ToolScript): Json {
  const prompt = countPromptTokens(req.messages);
  const completion = scriptTokens(script);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
  };
}

const created = () => Math.floor(Date.now() / 1000);

export function scriptedChatJson(res: ServerResponse, req: CompletionRequest, script: ToolScript): void {
  const message: Json =
    script.kind === 'answer'
      ? { role: 'assistant', content: script.text, refusal: null }
      : {
          role: 'assistant',
          content: null,
          refusal: null,
          tool_calls: script.calls.map((c) => ({
            id: callId('call_'),
            type: 'function',
            function: { name: c.name, arguments: c.arguments },
          })),
        };
  const json = JSON.stringify({
    id: callId('chatcmpl-'),
    object: 'chat.completion',
    created: created(),
    model: req.model,
    choices: [
      { index: 0, message, logprobs: null, finish_reason: script.kind === 'answer' ? 'stop' : 'tool_calls' },
    ],
    usage: req.sim.omitUsage ? undefined : usageOf(req, script),
  });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
  res.end(json);
}

/** A JSON text in pieces of up to 16 characters (as providers stream arguments). */
const pieces = (s: string): string[] => {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += 16) out.push(s.slice(i, i + 16));
  return out;
};

export function scriptedChatStream(res: ServerResponse, req: CompletionRequest, script: ToolScript): void {
  const base = {
    id: callId('chatcmpl-'),
    object: 'chat.completion.chunk',
    created: created(),
    model: req.model,
  };
  const usageNull = req.includeUsage ? { usage: null } : {};
  const chunk = (delta: Json, finish: string | null = null) =>
    `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...usageNull })}\n\n`;
  let out = chunk({ role: 'assistant', content: script.kind === 'answer' ? '' : null });
  if (script.kind === 'answer') for (const p of pieces(script.text)) out += chunk({ content: p });
  else {
    script.calls.forEach((c, index) => {
      out += chunk({
        tool_calls: [
          { index, id: callId('call_'), type: 'function', function: { name: c.name, arguments: '' } },
        ],
      });
      for (const p of pieces(c.arguments))
        out += chunk({ tool_calls: [{ index, function: { arguments: p } }] });
    });
  }
  out += chunk({}, script.kind === 'answer' ? 'stop' : 'tool_calls');
  if (req.includeUsage && !req.sim.omitUsage) {
    out += `data: ${JSON.stringify({ ...base, choices: [], usage: usageOf(req, script) })}\n\n`;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.end(`${out}data: [DONE]\n\n`);
}
