import { describe, expect, it } from 'vitest';
import { RAW_KEEP_CHARS } from '../chat/usage';
import { NativeEvents } from './native-stream';
import { parseResponsesRequest } from './request';

/** A native provider's Responses events as the relay reads them (type, data), and what it sends on. */
const echo = parseResponsesRequest({ model: 'm', input: 'hi' }).echo;
const delta = (seq: number, text: string) =>
  JSON.stringify({
    type: 'response.output_text.delta',
    sequence_number: seq,
    item_id: 'msg_1',
    output_index: 0,
    content_index: 0,
    delta: text,
    logprobs: [],
  });
const created = JSON.stringify({
  type: 'response.created',
  sequence_number: 0,
  response: { id: 'resp_up', object: 'response', model: 'up-model', status: 'in_progress', output: [] },
});

describe('NativeEvents (the Responses door relaying a provider that speaks the Responses API)', () => {
  it('relays the non-lifecycle events byte for byte and rewrites the Response of the lifecycle ones', () => {
    const ev = new NativeEvents('gen-1', 'vendor/model', 'prov', echo);
    const first = ev.event('response.created', created);
    const data = JSON.parse(first.out.split('\ndata: ')[1] as string);
    expect(data.response).toMatchObject({ id: 'gen-1', model: 'vendor/model', provider: 'prov' });
    expect(ev.upstreamId).toBe('resp_up');
    // Spacing and escapes as the provider wrote them (not re-serialised).
    const odd = '{"type":"response.output_text.delta", "sequence_number":1,"delta":"caf\\u00e9 \\"x\\""}';
    expect(ev.event('response.output_text.delta', odd).out).toBe(
      `event: response.output_text.delta\ndata: ${odd}\n\n`,
    );
    expect(ev.producedText()).toBe('café "x"');
  });

  it('keeps the deltas for the estimate in order, past RAW_KEEP_CHARS, and numbers a failure after the last event', () => {
    const ev = new NativeEvents('gen-1', 'vendor/model', 'prov', echo);
    ev.event('response.created', created);
    const pieces: string[] = [];
    let seq = 1;
    while (pieces.join('').length < 2 * RAW_KEEP_CHARS) {
      const text = `piece ${seq} `;
      pieces.push(text);
      ev.event('response.output_text.delta', delta(seq++, text));
    }
    expect(ev.producedText()).toBe(pieces.join(''));
    expect(ev.ended).toBe(false);
    const failed = JSON.parse(
      ev.end({ cost: 0 }, { code: 'server_error', message: 'cut' }).split('\ndata: ')[1] as string,
    );
    expect(failed).toMatchObject({ type: 'response.failed', sequence_number: seq });
    expect(failed.response).toMatchObject({ id: 'gen-1', status: 'failed' });
  });

  it('still parses what it cannot name: an event without its event line, an error event', () => {
    const ev = new NativeEvents('gen-1', 'vendor/model', 'prov', echo);
    expect(ev.event('', created).out).toContain('"id":"gen-1"');
    const err = ev.event('error', JSON.stringify({ type: 'error', code: 500, message: 'boom' }));
    expect(err).toEqual({ out: '', error: { code: 500, message: 'boom' } });
  });
});
