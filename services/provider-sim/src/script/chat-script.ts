import type { IncomingMessage, ServerResponse } from 'node:http';
import { firstToken, type SimDefaults } from '../completion/completion.handler';
import { countPromptTokens, countText } from '../completion/prompt-tokens';
import type { CompletionRequest } from '../completion/request';
import { BASH_TOOL, type BashScript, bashInput, textPieces } from './bash-script';

/**
 * The scripted Bash turn (bash-script.ts) in the OpenAI chat-completions format: a `tool_calls`
 * answer (`finish_reason: "tool_calls"`) or the final text, streamed (role chunk, the call with its
 * arguments in one piece or the text word by word, finish chunk, usage chunk when asked, `[DONE]`) or
 * not. Delays (`sim.ttft_ms`) apply; the other faults of `sim` do not.
 */
let counter = 0;
const callId = () => `call_sim${(++counter).toString(36).padStart(8, '0')}`;

function usageOf(req: CompletionRequest, completion: number): string {
  const prompt = countPromptTokens(req.messages);
  return `{"prompt_tokens":${prompt},"completion_tokens":${completion},"total_tokens":${prompt + completion},"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}`;
}

function toolCall(command: string) {
  const args = JSON.stringify(bashInput(command));
  return {
    call: { id: callId(), type: 'function', function: { name: BASH_TOOL, arguments: args } },
    tokens: countText(BASH_TOOL) + countText(args),
  };
}

export async function scriptedChat(
  req: IncomingMessage,
  res: ServerResponse,
  body: CompletionRequest,
  script: BashScript,
  defaults: SimDefaults,
): Promise<void> {
  const pacing = await firstToken(req, res, body.sim, defaults);
  if (!pacing) return;
  const created = Math.floor(Date.now() / 1000);
  const id = `chatcmpl-sim${(++counter).toString(36)}`;
  const call = script.kind === 'call' ? toolCall(script.command) : null;
  const completion = call ? call.tokens : countText(script.kind === 'answer' ? script.text : '');
  const finish = call ? 'tool_calls' : 'stop';
  if (!body.stream) {
    const message = call
      ? { role: 'assistant', content: null, tool_calls: [call.call] }
      : { role: 'assistant', content: script.kind === 'answer' ? script.text : '' };
    const json = `{"id":"${id}","object":"chat.completion","created":${created},"model":${JSON.stringify(body.model)},"choices":[{"index":0,"message":${JSON.stringify(message)},"logprobs":null,"finish_reason":"${finish}"}],"usage":${usageOf(body, completion)}}`;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
    res.end(json);
    return;
  }
  const chunk = (delta: unknown, finishReason: string | null) =>
    `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(body.model)},"choices":[{"index":0,"delta":${JSON.stringify(delta)},"logprobs":null,"finish_reason":${JSON.stringify(finishReason)}}]}\n\n`;
  let out = chunk({ role: 'assistant', content: '' }, null);
  if (call) {
    const { id: cid, function: fn } = call.call;
    out += chunk(
      { tool_calls: [{ index: 0, id: cid, type: 'function', function: { name: fn.name, arguments: '' } }] },
      null,
    );
    out += chunk({ tool_calls: [{ index: 0, function: { arguments: fn.arguments } }] }, null);
  } else if (script.kind === 'answer')
    for (const p of textPieces(script.text)) out += chunk({ content: p }, null);
  out += chunk({}, finish);
  if (body.includeUsage)
    out += `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(body.model)},"choices":[],"usage":${usageOf(body, completion)}}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.end(`${out}data: [DONE]\n\n`);
}
