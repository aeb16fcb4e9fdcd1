import { SseReader } from '../sse';
import { classCode } from './errors';
import { MessagesStreamReader } from './stream';

/**
 * Anthropic Messages SSE bytes → OpenAI chat-completion SSE text (`data: {chunk}\n\n`, `[DONE]` after
 * `message_stop`), for the proxy's one stream relay. An `error` event becomes `{"error":{code,...}}`
 * with the class's HTTP-style code (529 overloaded, 429, 401, 400, else 500), which the relay turns
 * into the §6 error chunk. Cost: each event is parsed here and its OpenAI chunk re-read by the relay
 * (one extra JSON.parse + SSE scan per event; the chunk strings themselves are built by concatenation).
 */
export class MessagesSseBridge {
  private readonly sse = new SseReader();
  private readonly reader: MessagesStreamReader;

  constructor(model: string, created: number) {
    this.reader = new MessagesStreamReader(model, created);
  }

  /** Upstream bytes → the OpenAI SSE text they complete ('' when none). */
  push(bytes: Uint8Array): string {
    return this.translate(this.sse.push(bytes));
  }

  /** End of the upstream body: a last event without its blank line. */
  end(): string {
    return this.translate(this.sse.end());
  }

  private translate(events: { type: string; data: string }[]): string {
    let out = '';
    for (const { type, data } of events) {
      const r = this.reader.read(type, data);
      if (r.error) {
        const e = r.error;
        const body = {
          error: {
            code: classCode(e.errorClass),
            message: e.detail ?? 'Provider stream error',
            type: e.providerType,
          },
        };
        out += `data: ${JSON.stringify(body)}\n\n`;
        continue;
      }
      for (const chunk of r.chunks) out += `data: ${chunk}\n\n`;
      if (r.done) out += 'data: [DONE]\n\n';
    }
    return out;
  }
}
