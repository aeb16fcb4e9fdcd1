import { deltaText, TEXT_KEEP_CHARS } from './chat/usage';

type Json = Record<string, unknown>;

const obj = (v: unknown): Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {};

const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** Pieces held before they are joined into one flat string (no tree of thousands of small nodes). */
const JOIN_EVERY = 64;

/**
 * The text a translated stream produced, for the estimate when the provider reports no usage, taken
 * from the chunks the door has parsed anyway: kept up to TEXT_KEEP_CHARS (what the tokenizer would
 * count), the rest only counted in UTF-8 bytes (an upper bound of its tokens) — the same cut as the
 * chat relay's ProducedText, which holds its chunks unparsed instead because it parses none.
 */
export class KeptText {
  private parts: string[] = [];
  private length = 0;
  private overflowBytes = 0;

  /** A parsed chat-completion chunk: the text of every choice's delta. */
  addChunk(chunk: Json): void {
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    for (const choice of choices) this.add(deltaText(obj(obj(choice).delta)));
  }

  private add(t: string): void {
    if (t.length === 0) return;
    const room = TEXT_KEEP_CHARS - this.length;
    let cut = Math.min(t.length, Math.max(0, room));
    // Never keep half a surrogate pair.
    if (cut > 0 && cut < t.length && isLowSurrogate(t.charCodeAt(cut))) cut--;
    if (cut > 0) {
      this.parts.push(cut === t.length ? t : t.slice(0, cut));
      this.length += cut;
      if (this.parts.length >= JOIN_EVERY) this.parts = [this.parts.join('')];
    }
    if (cut < t.length) this.overflowBytes += Buffer.byteLength(cut === 0 ? t : t.slice(cut), 'utf8');
  }

  result(): { text: string; overflowBytes: number } {
    return { text: this.parts.join(''), overflowBytes: this.overflowBytes };
  }
}
