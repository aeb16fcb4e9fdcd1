import { toNumber } from '@tollgate/money';
import { EXACT_BUDGET_CHARS } from '@tollgate/tokens';
import type { TokenCounts } from '../providers/wire-format';

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
 * it is held by every open stream (each kept chunk also pins the decoded network read it was sliced
 * from): at 64 KB a long stream held ~130 KB here, at 8 KB streams of up to ~40 chunks still never
 * parse a content chunk, and a longer one parses each once (~1 µs per chunk). Issue 11: RSS at
 * 10,000 open streams.
 */
export const RAW_KEEP_CHARS = 8_192;
/** Produced-text characters kept for the estimate; beyond, only their UTF-8 byte count. */
export const TEXT_KEEP_CHARS = EXACT_BUDGET_CHARS;

/**
 * What a stream produced, kept only as far as the estimate needs it (bounded memory per stream):
 * raw content chunks are held unparsed (no per-chunk work while the provider reports usage anyway)
 * up to RAW_KEEP_CHARS, then folded into their text; the text is kept up to TEXT_KEEP_CHARS (what
 * the tokenizer would count) and the rest is only counted, in UTF-8 bytes (an upper bound of its tokens).
 */
export class ProducedText {
  private raw: string[] = [];
  private rawChars = 0;
  private text = '';
  private overflowBytes = 0;

  /** The data of one content chunk (JSON text). */
  addChunk(data: string): void {
    this.raw.push(data);
    this.rawChars += data.length;
    if (this.rawChars > RAW_KEEP_CHARS) this.fold();
  }

  private fold(): void {
    for (const raw of this.raw) {
      let chunk: Json;
      try {
        chunk = obj(JSON.parse(raw));
      } catch {
        continue;
      }
      const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
      for (const choice of choices) this.addText(deltaText(obj(obj(choice).delta)));
    }
    this.raw = [];
    this.rawChars = 0;
  }

  private addText(t: string): void {
    if (t.length === 0) return;
    const room = TEXT_KEEP_CHARS - this.text.length;
    if (t.length <= room) {
      this.text += t;
      return;
    }
    let cut = Math.max(0, room);
    // Never keep half a surrogate pair.
    if (cut > 0 && cut < t.length && isLowSurrogate(t.charCodeAt(cut))) cut--;
    if (cut > 0) this.text += t.slice(0, cut);
    this.overflowBytes += Buffer.byteLength(cut === 0 ? t : t.slice(cut), 'utf8');
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

function deltaText(d: Json): string {
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
