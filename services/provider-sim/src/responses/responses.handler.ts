import type { IncomingMessage, ServerResponse } from 'node:http';
import { firstToken, planTokens, type SimDefaults } from '../completion/completion.handler';
import { PIECES, promptSeed } from '../completion/generator';
import { countText } from '../completion/prompt-tokens';
import { upstreamError } from '../http/openai-error';
import { callId, scriptTokens, toolScript } from '../script/tool-script';
import { encryptReasoning, type ResponsesRequest } from './responses.request';

/**
 * The simulator's `POST /v1/responses`: a Response object, or its typed events (response.created …
 * response.completed, each with `sequence_number`). Output: a reasoning item when reasoning was asked
 * for (with `encrypted_content` when `include` asks for it), then the scripted function calls
 * (script/tool-script.ts), or a message with the generated text. Usage: `input_tokens` (the prompt's
 * o200k count), `output_tokens` (reasoning included), their details.
 */

type Json = Record<string, unknown>;

interface Planned {
  id: string;
  output: Json[];
  status: 'completed' | 'incomplete';
  usage: Json;
}

const REASONING_SUMMARY = 'Planning the answer.';

function plan(req: ResponsesRequest): Planned {
  const id = callId('resp_');
  const input = countText(req.promptText);
  const seed = promptSeed([{ role: 'user', content: req.promptText }]);
  const tokens = planTokens(seed, input, req.maxOutputTokens, req.sim);
  const output: Json[] = [];
  const reasoningTokens = req.reasoning ? Math.max(tokens.reasoningTokens, countText(REASONING_SUMMARY)) : 0;
  if (req.reasoning) {
    const item: Json = {
      id: callId('rs_'),
      type: 'reasoning',
      summary: [{ type: 'summary_text', text: REASONING_SUMMARY }],
    };
    if (req.encryptedReasoning) item.encrypted_content = encryptReasoning(`${REASONING_SUMMARY} (${seed})`);
    output.push(item);
  }
  const script = req.tools.length > 0 ? toolScript(req.turns, req.tools) : null;
  let visible: number;
  let status: Planned['status'] = 'completed';
  if (script?.kind === 'calls') {
    for (const c of script.calls) {
      output.push({
        id: callId('fc_'),
        type: 'function_call',
        status: 'completed',
        call_id: callId('call_'),
        name: c.name,
        arguments: c.arguments,
      });
    }
    visible = scriptTokens(script);
  } else {
    const text =
      script?.kind === 'answer' ? script.text : Array.from(tokens.pieces, (p) => PIECES[p]).join('');
    visible = script?.kind === 'answer' ? scriptTokens(script) : tokens.pieces.length;
    if (script === null && tokens.finishReason === 'length') status = 'incomplete';
    output.push({
      id: callId('msg_'),
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
    });
  }
  const cached = Math.min(req.sim.cachedTokens, input);
  return {
    id,
    output,
    status,
    usage: {
      input_tokens: input,
      input_tokens_details: { cached_tokens: cached },
      output_tokens: visible + reasoningTokens,
      output_tokens_details: { reasoning_tokens: reasoningTokens },
      total_tokens: input + visible + reasoningTokens,
    },
  };
}

function responseOf(req: ResponsesRequest, p: Planned, status: string, done: boolean): Json {
  return {
    id: p.id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    model: req.model,
    output: done ? p.output : [],
    parallel_tool_calls: true,
    store: false,
    usage: done ? p.usage : null,
  };
}

function writeError(res: ServerResponse, status: number, message?: string): void {
  const body = JSON.stringify(upstreamError(status, message).toJSON());
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export async function responsesAnswer(
  req: IncomingMessage,
  res: ServerResponse,
  body: ResponsesRequest,
  defaults: SimDefaults,
): Promise<void> {
  const pacing = await firstToken(req, res, body.sim, defaults);
  if (!pacing) return;
  if (body.sim.errorStatus !== undefined) return writeError(res, body.sim.errorStatus, body.sim.errorMessage);
  const p = plan(body);
  if (!body.stream) {
    const json = JSON.stringify(responseOf(body, p, p.status, true));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
    res.end(json);
    return;
  }
  let seq = 0;
  const event = (type: string, fields: Json) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...fields })}\n\n`;
  let out = event('response.created', { response: responseOf(body, p, 'in_progress', false) });
  out += event('response.in_progress', { response: responseOf(body, p, 'in_progress', false) });
  p.output.forEach((item, output_index) => {
    out += itemEvents(event, item, output_index);
  });
  out += event(p.status === 'completed' ? 'response.completed' : 'response.incomplete', {
    response: responseOf(body, p, p.status, true),
  });
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.end(out);
}

/** The events of one output item: added, its deltas and dones, done. */
function itemEvents(event: (type: string, fields: Json) => string, item: Json, output_index: number): string {
  const item_id = item.id;
  if (item.type === 'reasoning') {
    const text = ((item.summary as Json[])[0] as Json).text as string;
    const at = { item_id, output_index, summary_index: 0 };
    return (
      event('response.output_item.added', { output_index, item: { ...item, summary: [] } }) +
      event('response.reasoning_summary_part.added', { ...at, part: { type: 'summary_text', text: '' } }) +
      event('response.reasoning_summary_text.delta', { ...at, delta: text }) +
      event('response.reasoning_summary_text.done', { ...at, text }) +
      event('response.reasoning_summary_part.done', { ...at, part: { type: 'summary_text', text } }) +
      event('response.output_item.done', { output_index, item })
    );
  }
  if (item.type === 'function_call') {
    const args = item.arguments as string;
    return (
      event('response.output_item.added', {
        output_index,
        item: { ...item, arguments: '', status: 'in_progress' },
      }) +
      event('response.function_call_arguments.delta', { item_id, output_index, delta: args }) +
      event('response.function_call_arguments.done', {
        item_id,
        output_index,
        name: item.name,
        arguments: args,
      }) +
      event('response.output_item.done', { output_index, item })
    );
  }
  const part = (item.content as Json[])[0] as Json;
  const text = part.text as string;
  const at = { item_id, output_index, content_index: 0 };
  let out =
    event('response.output_item.added', {
      output_index,
      item: { ...item, status: 'in_progress', content: [] },
    }) + event('response.content_part.added', { ...at, part: { ...part, text: '' } });
  for (const piece of text.match(/[\s\S]{1,16}/g) ?? [])
    out += event('response.output_text.delta', { ...at, delta: piece, logprobs: [] });
  return (
    out +
    event('response.output_text.done', { ...at, text, logprobs: [] }) +
    event('response.content_part.done', { ...at, part }) +
    event('response.output_item.done', { output_index, item })
  );
}
