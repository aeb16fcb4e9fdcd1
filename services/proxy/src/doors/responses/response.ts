import { toNumber } from '@tollgate/money';
import type { TokenCounts } from '../../providers/wire-format';
import type { ResponseEcho } from './request';
import type { ToolNames } from './tools';

/**
 * The Response object (OpenAI Responses API) of an answer: from a `chat.completion` (what every
 * provider wire format hands back) for a JSON answer, and the `response` of the stream's lifecycle
 * events (stream.ts builds its output items with the same functions).
 */

type Json = Record<string, unknown>;

const obj = (v: unknown): Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {};

/** What every Response of one request shares. */
export interface ResponseContext {
  /** The request id (the generation id; `X-Generation-Id`). */
  id: string;
  /** The catalog model id the caller asked for. */
  model: string;
  /** Unix seconds. */
  createdAt: number;
  echo: ResponseEcho;
  names: ToolNames;
}

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** Output item ids, derived from the request id (unique per answer, stable between events). */
export const itemId = {
  message: (ctx: ResponseContext, n: number) => `msg_${ctx.id}${n === 0 ? '' : `_${n}`}`,
  reasoning: (ctx: ResponseContext, n: number) => `rs_${ctx.id}${n === 0 ? '' : `_${n}`}`,
  call: (ctx: ResponseContext, n: number) => `fc_${ctx.id}_${n}`,
};

export const outputText = (text: string): Json => ({
  type: 'output_text',
  text,
  annotations: [],
  logprobs: [],
});

export function messageItem(id: string, status: 'in_progress' | 'completed', content: Json[]): Json {
  return { id, type: 'message', status, role: 'assistant', content };
}

export function reasoningItem(id: string, summary: string | null): Json {
  return {
    id,
    type: 'reasoning',
    summary: summary === null ? [] : [{ type: 'summary_text', text: summary }],
  };
}

export function callItem(
  ctx: ResponseContext,
  id: string,
  call: { callId: string; name: string; arguments: string },
  status: 'in_progress' | 'completed',
): Json {
  const { name, namespace } = ctx.names.call(call.name);
  const item: Json = {
    id,
    type: 'function_call',
    status,
    arguments: call.arguments,
    call_id: call.callId,
    name,
  };
  if (namespace !== null) item.namespace = namespace;
  return item;
}

/** The Responses usage object: token counts, their details, and the gateway's `cost` (credits). */
export function responsesUsage(tokens: TokenCounts, costUnits: bigint): Json {
  return {
    input_tokens: tokens.prompt,
    input_tokens_details: { cached_tokens: tokens.cached, cache_write_tokens: tokens.cacheWrite },
    output_tokens: tokens.completion,
    output_tokens_details: { reasoning_tokens: tokens.reasoning },
    total_tokens: tokens.prompt + tokens.completion,
    cost: toNumber(costUnits),
    is_byok: false,
  };
}

/** A chat `finish_reason` → the Response's status and `incomplete_details`. */
export function statusOf(finishReason: string | null): { status: ResponseStatus; incomplete: Json | null } {
  if (finishReason === 'length') return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' } };
  if (finishReason === 'content_filter')
    return { status: 'incomplete', incomplete: { reason: 'content_filter' } };
  return { status: 'completed', incomplete: null };
}

/** The text of `output`'s message items (the SDK's `output_text`). */
const joinedText = (output: Json[]): string =>
  output
    .filter((i) => i.type === 'message')
    .flatMap((i) =>
      (i.content as Json[]).filter((p) => p.type === 'output_text').map((p) => p.text as string),
    )
    .join('');

/** A whole Response object. */
export function responseObject(
  ctx: ResponseContext,
  parts: {
    status: ResponseStatus;
    output: Json[];
    usage: Json | null;
    incomplete?: Json | null;
    error?: Json | null;
    provider?: string;
  },
): Json {
  const e = ctx.echo;
  const r: Json = {
    id: ctx.id,
    object: 'response',
    created_at: ctx.createdAt,
    status: parts.status,
    background: false,
    error: parts.error ?? null,
    incomplete_details: parts.incomplete ?? null,
    instructions: e.instructions,
    max_output_tokens: e.max_output_tokens,
    metadata: e.metadata,
    model: ctx.model,
    output: parts.output,
    output_text: joinedText(parts.output),
    parallel_tool_calls: e.parallel_tool_calls,
    previous_response_id: null,
    prompt_cache_key: e.prompt_cache_key,
    reasoning: e.reasoning,
    service_tier: 'default',
    store: false,
    temperature: e.temperature,
    text: e.text,
    tool_choice: e.tool_choice,
    tools: e.tools,
    top_p: e.top_p,
    truncation: 'disabled',
    usage: parts.usage,
    user: e.user,
  };
  if (parts.provider !== undefined) r.provider = parts.provider;
  return r;
}

/** The output items of a `chat.completion`'s first choice: reasoning, the message, the function calls. */
function outputOfCompletion(ctx: ResponseContext, completion: Json): Json[] {
  const choice = obj(Array.isArray(completion.choices) ? completion.choices[0] : undefined);
  const m = obj(choice.message);
  const output: Json[] = [];
  const reasoning =
    typeof m.reasoning === 'string'
      ? m.reasoning
      : typeof m.reasoning_content === 'string'
        ? m.reasoning_content
        : '';
  if (reasoning.length > 0) output.push(reasoningItem(itemId.reasoning(ctx, 0), reasoning));
  const content: Json[] = [];
  if (typeof m.content === 'string' && m.content.length > 0) content.push(outputText(m.content));
  if (typeof m.refusal === 'string' && m.refusal.length > 0)
    content.push({ type: 'refusal', refusal: m.refusal });
  const calls = Array.isArray(m.tool_calls) ? m.tool_calls : [];
  // An answer with neither text nor calls is still one (empty) message, as OpenAI answers it.
  if (content.length > 0 || calls.length === 0) {
    output.push(
      messageItem(itemId.message(ctx, 0), 'completed', content.length > 0 ? content : [outputText('')]),
    );
  }
  calls.forEach((raw, i) => {
    const call = obj(raw);
    const fn = obj(call.function);
    output.push(
      callItem(
        ctx,
        itemId.call(ctx, i),
        {
          callId: typeof call.id === 'string' ? call.id : `call_${ctx.id}_${i}`,
          name: typeof fn.name === 'string' ? fn.name : '',
          arguments: typeof fn.arguments === 'string' ? fn.arguments : '',
        },
        'completed',
      ),
    );
  });
  return output;
}

/** The Response of a JSON answer: its `chat.completion`, counted tokens and cost. */
export function responseOfCompletion(
  ctx: ResponseContext,
  completion: Json,
  tokens: TokenCounts,
  costUnits: bigint,
  provider: string,
): Json {
  const choice = obj(Array.isArray(completion.choices) ? completion.choices[0] : undefined);
  const finish = typeof choice.finish_reason === 'string' ? choice.finish_reason : null;
  const { status, incomplete } = statusOf(finish);
  return responseObject(ctx, {
    status,
    incomplete,
    output: outputOfCompletion(ctx, completion),
    usage: responsesUsage(tokens, costUnits),
    provider,
  });
}
