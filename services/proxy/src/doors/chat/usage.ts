import { toNumber } from '@tollgate/money';
import { EXACT_BUDGET_CHARS } from '@tollgate/tokens';
import type { TokenCounts } from '../../providers/wire-format';

type Json = Record<string, unknown>;

const obj = (v: unknown): Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {};

/**
 * The usage object of spec §2.4: the provider's object (extra fields kept) completed with cost,
 * is_byok and zero-filled details.
 */
export function completeUsage(providerUsage: unknown, tokens: TokenCounts, costUnits: bigint): Json {
  const u = obj(providerUsage);
  return {
    ...u,
    prompt_tokens: tokens.prompt,
    completion_tokens: tokens.completion,
    total_tokens: tokens.prompt + tokens.completion,
    prompt_tokens_details: {
      ...obj(u.prompt_tokens_details),
      cached_tokens: tokens.cached,
      cache_write_tokens: tokens.cacheWrite,
    },
    completion_tokens_details: { ...obj(u.completion_tokens_details), reasoning_tokens: tokens.reasoning },
    cost: toNumber(costUnits),
    is_byok: false,
  };
}

/**
 * Raw content-chunk characters a stream keeps unparsed before folding them into text. Small, because
 * it is held by every open stream: at 64 KB a long stream held ~130 KB here; at 8 KB of kept chunk
 * text (only the `"choices":…` part of a chunk, see `keptPart`) streams of up to ~100 short chunks
 * never parse a content chunk, and a longer one parses each once (~1 µs per chunk). Issue 11: RSS at
 * 10,000 open streams.
 */
export const RAW_KEEP_CHARS = 8_192;
/** Produced-text characters kept for the estimate; beyond, only their UTF-8 byte count. */
export const TEXT_KEEP_CHARS = EXACT_BUDGET_CHARS;
/**
 * Kept chunk texts are packed into one flat string every PACK_EVERY chunks. Each is a slice of its
 * chunk's text and pins all of it (plus a slice header and an array slot): ≈ 200 bytes for the
 * 72-character kept part of a 150-character chunk. Packed, it is its own characters.
 */
export const PACK_EVERY = 8;
/**
 * Separator of packed chunk texts: a raw control character, which valid JSON text never holds (it must
 * be escaped inside strings and is not whitespace outside), so a chunk that holds one is not JSON.
 */
const SEP = '\x1e';
const CHOICES_KEY = '"choices":';

/**
 * The part of a content chunk's JSON text the estimate reads (its `choices`), kept without parsing:
 * from the `"choices":` key on when that key belongs to the top-level object and only primitive
 * members precede it (no `{` or `[` between the object's opening brace and the key), else the whole
 * text. `{` + the part then parses to the same `choices` as the whole chunk (a later duplicate key wins
 * in both). A JSON string cannot hold an unescaped `"`, so `"choices":` found there is a key.
 * null: the text holds SEP, so it is not JSON and the estimate would skip it anyway.
 */
export function keptPart(data: string): string | null {
  let kept = data;
  const i = data.indexOf(CHOICES_KEY);
  if (i > 0 && data.charCodeAt(0) === 123 /* { */) {
    const brace = data.indexOf('{', 1);
    const bracket = data.indexOf('[', 1);
    if ((brace === -1 || brace > i) && (bracket === -1 || bracket > i)) kept = data.slice(i);
  }
  return kept.includes(SEP) ? null : kept;
}

/**
 * What a stream produced, kept only as far as the estimate needs it (bounded memory per stream):
 * content chunks are held unparsed (no per-chunk work while the provider reports usage anyway), only
 * their `choices` part, packed into flat strings (they pin no whole chunk), up to RAW_KEEP_CHARS;
 * then they are folded into their text, kept up to TEXT_KEEP_CHARS (what the tokenizer would count)
 * as one flat string; the rest is only counted, in UTF-8 bytes (an upper bound of its tokens).
 */
export class ProducedText {
  /** Packed kept parts: up to PACK_EVERY of them joined by SEP (flat copies). */
  private packed: string[] = [];
  /** Kept parts not yet packed (slices of their reads). */
  private pending: string[] = [];
  private rawChars = 0;
  private text = '';
  private overflowBytes = 0;

  /** The data of one content chunk (JSON text). */
  addChunk(data: string): void {
    const kept = keptPart(data);
    if (kept === null) return;
    this.pending.push(kept);
    this.rawChars += kept.length;
    if (this.rawChars > RAW_KEEP_CHARS) this.fold();
    else if (this.pending.length >= PACK_EVERY) {
      this.packed.push(this.pending.join(SEP));
      this.pending = [];
    }
  }

  private fold(): void {
    const parts: string[] = [this.text];
    let length = this.text.length;
    const add = (t: string) => {
      if (t.length === 0) return;
      const room = TEXT_KEEP_CHARS - length;
      let cut = Math.min(t.length, Math.max(0, room));
      // Never keep half a surrogate pair.
      if (cut > 0 && cut < t.length && isLowSurrogate(t.charCodeAt(cut))) cut--;
      if (cut > 0) {
        parts.push(cut === t.length ? t : t.slice(0, cut));
        length += cut;
      }
      if (cut < t.length) this.overflowBytes += Buffer.byteLength(cut === 0 ? t : t.slice(cut), 'utf8');
    };
    const parse = (kept: string) => {
      let chunk: Json;
      try {
        chunk = obj(JSON.parse(kept.charCodeAt(0) === 34 /* " */ ? `{${kept}` : kept));
      } catch {
        return;
      }
      const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
      for (const choice of choices) add(deltaText(obj(obj(choice).delta)));
    };
    for (const block of this.packed) for (const kept of block.split(SEP)) parse(kept);
    for (const kept of this.pending) parse(kept);
    this.packed = [];
    this.pending = [];
    this.rawChars = 0;
    // One flat string (appending piece by piece would build a tree of thousands of small nodes).
    if (parts.length > 1) this.text = parts.join('');
  }

  /** The kept text and the byte count of the rest. */
  result(): { text: string; overflowBytes: number } {
    this.fold();
    return { text: this.text, overflowBytes: this.overflowBytes };
  }
}

const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** The text of a non-streamed response's choices (content, reasoning, tool call arguments). */
export function messageText(response: Json): string {
  let text = '';
  const choices = Array.isArray(response.choices) ? response.choices : [];
  for (const choice of choices) text += deltaText(obj(obj(choice).message));
  return text;
}

/** The text of one choice's delta (or message): content, reasoning, refusal, tool call names and arguments. */
export function deltaText(d: Json): string {
  let text = '';
  if (typeof d.content === 'string') text += d.content;
  if (typeof d.reasoning === 'string') text += d.reasoning;
  if (typeof d.reasoning_content === 'string') text += d.reasoning_content;
  if (typeof d.refusal === 'string') text += d.refusal;
  if (Array.isArray(d.tool_calls)) {
    for (const call of d.tool_calls) {
      const fn = obj(obj(call).function);
      if (typeof fn.name === 'string') text += fn.name;
      if (typeof fn.arguments === 'string') text += fn.arguments;
    }
  }
  return text;
}
