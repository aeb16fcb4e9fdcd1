import { ChunkWriter, errorData, sseText, usageOf } from '../chunks';
import { SseReader } from '../sse';
import type { TokenCounts } from '../wire-format';
import { finishReasonOf, geminiTokens, partsOf } from './response';

/**
 * Gemini `streamGenerateContent?alt=sse` bytes → OpenAI chunk SSE text (one instance per stream).
 * Each event is a whole GenerateContentResponse: the first gives the role chunk, its text parts content
 * chunks, its function calls whole tool-call chunks (Gemini streams a call in one piece), the one with a
 * `finishReason` (or a prompt `blockReason`) the finish chunk. `usageMetadata` (cumulative) is kept;
 * at the end of the body, after a finish, the usage chunk and `[DONE]` follow. A body that ends without
 * a finish ends without `[DONE]`: the relay treats it as cut. An `{"error": …}` event becomes the error
 * data the relay turns into the §6 error chunk.
 */
type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export class GeminiSseBridge {
  private readonly sse = new SseReader();
  private readonly out: ChunkWriter;
  private started = false;
  private finished = false;
  private tools = 0;
  private tokens: TokenCounts | null = null;

  constructor(model: string, created: number) {
    this.out = new ChunkWriter(model, created);
  }

  push(bytes: Uint8Array): string {
    return this.translate(this.sse.push(bytes));
  }

  end(): string {
    let text = this.translate(this.sse.end());
    if (this.finished) {
      text += sseText(this.tokens ? [this.out.usage(usageOf(this.tokens))] : [], true);
    }
    return text;
  }

  private translate(events: { data: string }[]): string {
    const chunks: string[] = [];
    for (const { data } of events) {
      let ev: Json;
      try {
        ev = JSON.parse(data) as Json;
      } catch {
        continue;
      }
      if (isObj(ev.error)) {
        const code = typeof ev.error.code === 'number' ? ev.error.code : 500;
        const message = typeof ev.error.message === 'string' ? ev.error.message : 'Provider stream error';
        chunks.push(errorData(code, message, typeof ev.error.status === 'string' ? ev.error.status : null));
        continue;
      }
      this.read(ev, chunks);
    }
    return sseText(chunks, false);
  }

  private read(ev: Json, chunks: string[]): void {
    if (!this.started) {
      this.started = true;
      if (typeof ev.responseId === 'string') this.out.setId(ev.responseId);
      chunks.push(this.out.role());
    }
    this.tokens = geminiTokens(ev.usageMetadata) ?? this.tokens;
    const candidate = Array.isArray(ev.candidates) ? ev.candidates[0] : undefined;
    const { text, calls } = partsOf(candidate);
    if (text.length > 0) chunks.push(this.out.content(text));
    for (const call of calls) chunks.push(this.out.toolCall(this.tools++, call));
    const reason = isObj(candidate) ? candidate.finishReason : undefined;
    const blocked = isObj(ev.promptFeedback) && typeof ev.promptFeedback.blockReason === 'string';
    if (!this.finished && (typeof reason === 'string' || blocked)) {
      this.finished = true;
      chunks.push(
        this.out.finish(blocked && !candidate ? 'content_filter' : finishReasonOf(reason, this.tools > 0)),
      );
    }
  }
}
