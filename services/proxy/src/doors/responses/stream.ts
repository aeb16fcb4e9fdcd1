import {
  callItem,
  itemId,
  messageItem,
  outputText,
  type ResponseContext,
  reasoningItem,
  responseObject,
  statusOf,
} from './response';

/**
 * OpenAI chat-completion chunks (what every provider wire format's stream is bridged to) → the
 * Responses API's typed stream events, each `event: <type>` + `data: <json>` with a `sequence_number`,
 * in the order the openai SDK's `ResponseStream` checks (output indexes appear once, every added item
 * is done before `response.completed`, whose output repeats the items):
 *
 *   response.created, response.in_progress,
 *   reasoning: output_item.added, reasoning_summary_part.added, reasoning_summary_text.delta…,
 *              reasoning_summary_text.done, reasoning_summary_part.done, output_item.done
 *   message:   output_item.added, content_part.added, output_text.delta…, output_text.done,
 *              content_part.done, output_item.done
 *   call:      output_item.added, function_call_arguments.delta…, function_call_arguments.done, output_item.done
 *   response.completed | response.incomplete | response.failed
 *
 * The text and arguments of the items are kept until the end: `response.completed` repeats them
 * (bounded by the answer's own length, which the duration and output caps bound).
 */

type Json = Record<string, unknown>;

/** Read only, never written: what `obj` gives for a missing object. */
const NONE: Json = Object.freeze({}) as Json;
const obj = (v: unknown): Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : NONE;

interface OpenItem {
  kind: 'reasoning' | 'message' | 'call';
  index: number;
  id: string;
  text: string;
  /** A call's id and (flattened) name. */
  callId?: string;
  name?: string;
  /** Its delta events' fields after `sequence_number`, up to the delta's value (JSON text, made once). */
  deltaAt: string;
}

/** What follows a delta's value: the text delta's `logprobs`, or the end of the object. */
const TEXT_DELTA_END = ',"logprobs":[]}\n\n';
const DELTA_END = '}\n\n';

export class ResponsesEvents {
  readonly #ctx: ResponseContext;
  #seq = 0;
  /** Items done, with their output index. */
  readonly #done: { index: number; item: Json }[] = [];
  #callCount = 0;
  /** Text of the items done (the estimate's input when the provider reports no usage). */
  #doneText = '';
  #reasoning: OpenItem | null = null;
  #message: OpenItem | null = null;
  /** Open function calls by their chat `tool_calls` index. */
  readonly #calls = new Map<number, OpenItem>();
  #next = 0;
  #finishReason: string | null = null;
  #ended = false;

  constructor(ctx: ResponseContext) {
    this.#ctx = ctx;
  }

  /** The chat finish reason seen (null until one came). */
  get finishReason(): string | null {
    return this.#finishReason;
  }

  #event(type: string, fields: Json): string {
    const data = JSON.stringify({ type, sequence_number: this.#seq++, ...fields });
    return `event: ${type}\ndata: ${data}\n\n`;
  }

  /** The text the answer produced so far (reasoning, message, call names and arguments): the estimate's input. */
  producedText(): string {
    let text = this.#doneText;
    for (const open of [this.#reasoning, this.#message, ...this.#calls.values()]) {
      if (open !== null) text += `${open.name ?? ''}${open.text}`;
    }
    return text;
  }

  /** response.created and response.in_progress (status `in_progress`, no output yet). */
  start(): string {
    const response = responseObject(this.#ctx, { status: 'in_progress', output: [], usage: null });
    return this.#event('response.created', { response }) + this.#event('response.in_progress', { response });
  }

  /** One chat-completion chunk (parsed) → the events it completes ('' when none). */
  chunk(chunk: Json): string {
    if (this.#ended) return '';
    const choice = obj(Array.isArray(chunk.choices) ? chunk.choices[0] : undefined);
    const delta = choice === NONE ? NONE : obj(choice.delta);
    let out = '';
    const reasoning = typeof delta.reasoning === 'string' ? delta.reasoning : delta.reasoning_content;
    if (typeof reasoning === 'string' && reasoning.length > 0) out += this.#reasoningDelta(reasoning);
    if (typeof delta.content === 'string' && delta.content.length > 0) out += this.#textDelta(delta.content);
    if (Array.isArray(delta.tool_calls))
      for (const call of delta.tool_calls) out += this.#callDelta(obj(call));
    if (typeof choice.finish_reason === 'string') this.#finishReason = choice.finish_reason;
    return out;
  }

  /**
   * A delta event from fixed parts: the same bytes as `#event(type, { ...fields, delta })` with the
   * open item's fields made once (issue 30: no object and no object serialisation per delta).
   */
  #delta(type: string, open: OpenItem, delta: string, end: string): string {
    const seq = this.#seq++;
    return `event: ${type}\ndata: {"type":"${type}","sequence_number":${seq}${open.deltaAt}${JSON.stringify(delta)}${end}`;
  }

  #open(kind: OpenItem['kind'], id: string, item: Json): { open: OpenItem; text: string } {
    const index = this.#next++;
    const at = `,"item_id":${JSON.stringify(id)},"output_index":${index}`;
    const deltaAt =
      kind === 'call'
        ? `${at},"delta":`
        : `${at},"${kind === 'message' ? 'content' : 'summary'}_index":0,"delta":`;
    const open: OpenItem = { kind, index, id, text: '', deltaAt };
    return { open, text: this.#event('response.output_item.added', { output_index: open.index, item }) };
  }

  #reasoningDelta(delta: string): string {
    let out = '';
    if (this.#reasoning === null) {
      out += this.#closeMessage();
      const id = itemId.reasoning(this.#ctx, this.#next);
      const { open, text } = this.#open('reasoning', id, reasoningItem(id, null));
      this.#reasoning = open;
      out += text;
      out += this.#event('response.reasoning_summary_part.added', {
        item_id: id,
        output_index: open.index,
        summary_index: 0,
        part: { type: 'summary_text', text: '' },
      });
    }
    const r = this.#reasoning;
    r.text += delta;
    return out + this.#delta('response.reasoning_summary_text.delta', r, delta, DELTA_END);
  }

  #textDelta(delta: string): string {
    let out = this.#closeReasoning();
    if (this.#message === null) {
      const id = itemId.message(this.#ctx, this.#next);
      const { open, text } = this.#open('message', id, messageItem(id, 'in_progress', []));
      this.#message = open;
      out += text;
      out += this.#event('response.content_part.added', {
        item_id: id,
        output_index: open.index,
        content_index: 0,
        part: outputText(''),
      });
    }
    const m = this.#message;
    m.text += delta;
    return out + this.#delta('response.output_text.delta', m, delta, TEXT_DELTA_END);
  }

  #callDelta(call: Json): string {
    const index = typeof call.index === 'number' ? call.index : 0;
    const fn = obj(call.function);
    let out = '';
    let open = this.#calls.get(index);
    if (open === undefined) {
      out += this.#closeReasoning() + this.#closeMessage();
      const id = itemId.call(this.#ctx, this.#callCount++);
      const callId = typeof call.id === 'string' ? call.id : `call_${id}`;
      const name = typeof fn.name === 'string' ? fn.name : '';
      const opened = this.#open(
        'call',
        id,
        callItem(this.#ctx, id, { callId, name, arguments: '' }, 'in_progress'),
      );
      open = Object.assign(opened.open, { callId, name });
      this.#calls.set(index, open);
      out += opened.text;
    } else if (typeof fn.name === 'string' && fn.name.length > 0 && open.name === '') open.name = fn.name;
    const args = fn.arguments;
    if (typeof args === 'string' && args.length > 0) {
      open.text += args;
      out += this.#delta('response.function_call_arguments.delta', open, args, DELTA_END);
    }
    return out;
  }

  #closeReasoning(): string {
    const r = this.#reasoning;
    if (r === null) return '';
    this.#reasoning = null;
    const item = reasoningItem(r.id, r.text);
    this.#done.push({ index: r.index, item });
    this.#doneText += r.text;
    const at = { item_id: r.id, output_index: r.index, summary_index: 0 };
    return (
      this.#event('response.reasoning_summary_text.done', { ...at, text: r.text }) +
      this.#event('response.reasoning_summary_part.done', {
        ...at,
        part: { type: 'summary_text', text: r.text },
      }) +
      this.#event('response.output_item.done', { output_index: r.index, item })
    );
  }

  #closeMessage(): string {
    const m = this.#message;
    if (m === null) return '';
    this.#message = null;
    const part = outputText(m.text);
    const item = messageItem(m.id, 'completed', [part]);
    this.#done.push({ index: m.index, item });
    this.#doneText += m.text;
    const at = { item_id: m.id, output_index: m.index, content_index: 0 };
    return (
      this.#event('response.output_text.done', { ...at, text: m.text, logprobs: [] }) +
      this.#event('response.content_part.done', { ...at, part }) +
      this.#event('response.output_item.done', { output_index: m.index, item })
    );
  }

  #closeCalls(): string {
    let out = '';
    for (const c of [...this.#calls.values()].sort((a, b) => a.index - b.index)) {
      const item = callItem(
        this.#ctx,
        c.id,
        { callId: c.callId ?? '', name: c.name ?? '', arguments: c.text },
        'completed',
      );
      this.#done.push({ index: c.index, item });
      this.#doneText += `${c.name ?? ''}${c.text}`;
      out += this.#event('response.function_call_arguments.done', {
        item_id: c.id,
        output_index: c.index,
        name: item.name,
        arguments: c.text,
      });
      out += this.#event('response.output_item.done', { output_index: c.index, item });
    }
    this.#calls.clear();
    return out;
  }

  /** Every open item done, in output order. */
  #closeAll(): string {
    return this.#closeReasoning() + this.#closeMessage() + this.#closeCalls();
  }

  #output(): Json[] {
    return [...this.#done].sort((a, b) => a.index - b.index).map((d) => d.item);
  }

  /**
   * The end of a served stream: open items done, then response.completed (or response.incomplete for
   * a `length` / `content_filter` finish) carrying the whole output and the priced usage.
   */
  end(usage: Json, provider: string): string {
    if (this.#ended) return '';
    let out = this.#closeAll();
    this.#ended = true;
    const { status, incomplete } = statusOf(this.#finishReason);
    const response = responseObject(this.#ctx, {
      status,
      incomplete,
      output: this.#output(),
      usage,
      provider,
    });
    out += this.#event(status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
    return out;
  }

  /** A failure after the head: response.failed with the error (its items as far as they came). */
  fail(error: { code: string; message: string }, usage: Json | null): string {
    if (this.#ended) return '';
    this.#ended = true;
    const response = responseObject(this.#ctx, { status: 'failed', output: this.#output(), usage, error });
    return this.#event('response.failed', { response });
  }
}
