import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { GptEncoding } from 'gpt-tokenizer/GptEncoding';

/**
 * Conservative token estimates for billing when a provider reports no usage, and for worst-case
 * reservations before forwarding. Base count: gpt-tokenizer o200k (GPT-4o family) plus OpenAI's
 * chat overhead (3 tokens per message, +1 with `name`, +3 to prime the reply); the estimate then adds
 * a safety margin (5%, rounded up) so it is never below the count of an OpenAI-family tokenizer and
 * leaves room for tokenizers that split text a little finer.
 *
 * Counting can never block the event loop. gpt-tokenizer costs ~2 µs per character of new text
 * (~4.5 µs for CJK) and is quadratic in the length of one pre-token (a run without whitespace:
 * `'q'.repeat(100_000)` takes ~7 s). So the tokenizer never sees a piece longer than
 * MAX_PIECE_CHARS, nor a run without whitespace longer than MAX_RUN_CHARS: a longer run is cut,
 * each cut counted as one extra token (a cut loses at most the merges across it, so the pieces' sum
 * plus one per cut stays at or above the whole run's count in practice; the 5% margin covers the
 * rest). And one count (a whole prompt, or one completion text) tokenizes at most
 * EXACT_BUDGET_CHARS characters and, past its first ALWAYS_EXACT_CHARS, stops tokenizing once it has
 * run COUNT_TIME_BUDGET_MS: the rest of the text is counted by its UTF-8 bytes, a linear upper bound
 * (every o200k token covers at least one byte). Ordinary prompts are counted exactly; no input can
 * hold the event loop for more than a few milliseconds.
 */

/** Safety margin applied to exact counts: estimate = exact + ceil(exact × 5 / 100). */
export const SAFETY_MARGIN_PERCENT = 5;
export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_PER_NAME = 1;
export const REPLY_PRIMING_TOKENS = 3;
/**
 * Part types counted as media, not text: images and documents. What one counts depends on the model
 * (its catalog bounds, @tollgate/catalog `mediaPromptTokens`), so the text count leaves them out and
 * the proxy adds them per model (services/proxy/src/pipeline/bound.ts).
 */
export const MEDIA_PART_TYPES: ReadonlySet<string> = new Set([
  'image_url',
  'input_image',
  'image',
  'file',
  'input_file',
  'document',
]);
/** Longest run without whitespace handed to the tokenizer in one piece. */
export const MAX_RUN_CHARS = 128;
/** Longest piece handed to the tokenizer (split at whitespace): ≤ ~2.5 ms of tokenizing. */
export const MAX_PIECE_CHARS = 512;
/** Characters one count (one prompt, one completion text) tokenizes at most; beyond: UTF-8 bytes. */
export const EXACT_BUDGET_CHARS = 32_768;
/** Characters one count always tokenizes, whatever the time (short texts are always exact). */
export const ALWAYS_EXACT_CHARS = 1_024;
/** Tokenizing time of one count after which the rest is counted by UTF-8 bytes. */
export const COUNT_TIME_BUDGET_MS = 5;

const AS_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * o200k's byte-pair ranks, read from the tokenizer's own `data/o200k_base.tiktoken` (OpenAI's
 * format: one `base64 rank` line per token) instead of importing gpt-tokenizer's `o200k_base` module.
 * That module is a 2.4 MB JavaScript array literal: V8's parse and compile of it left ≈ 27 MB more
 * resident memory in every process that counts tokens (every proxy worker) than this table does
 * (issue 11: RSS). A token is the string of its bytes when they are valid UTF-8, else the byte
 * array — gpt-tokenizer's own representation (tokens.test.ts compares the two tables whole).
 */
export function loadO200kRanks(): Array<string | number[]> {
  const file = createRequire(import.meta.url).resolve('gpt-tokenizer/data/o200k_base.tiktoken');
  const text = readFileSync(file, 'latin1');
  // Like gpt-tokenizer's table, a token starting with a byte-order mark stays bytes: the decoder drops
  // a leading BOM, so such a token does not come back whole and fails the length check below.
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const ranks: Array<string | number[]> = [];
  for (let start = 0; start < text.length; ) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const space = text.indexOf(' ', start);
    if (space > start && space < end) {
      const bytes = Buffer.from(text.slice(start, space), 'base64');
      let token: string | number[] | undefined;
      try {
        const decoded = utf8.decode(bytes);
        if (Buffer.byteLength(decoded, 'utf8') === bytes.length) token = decoded;
      } catch {
        // Not valid UTF-8: a byte array.
      }
      ranks[Number(text.slice(space + 1, end))] = token ?? Array.from(bytes);
    }
    start = end + 1;
  }
  return ranks;
}

const { countTokens } = GptEncoding.getEncodingApi('o200k_base', loadO200kRanks);

// Prompts repeat (system prompts, chat history re-sent every turn): cache counts of short texts.
const cache = new Map<string, number>();
// Bounded: at most 2,000 texts of up to 4,096 chars (≤ 16 MB).
const CACHE_MAX_ENTRIES = 2_000;
const CACHE_MAX_TEXT = 4_096;

/** What the tokenizer may still spend in the current count: characters, and time past ALWAYS_EXACT_CHARS. */
export interface CountBudget {
  /** Characters it may still tokenize. */
  chars: number;
  /** Characters tokenized so far. */
  used: number;
  /** performance.now() after which (and past ALWAYS_EXACT_CHARS) the rest is counted by bytes. */
  deadline: number;
}
export const newBudget = (chars = EXACT_BUDGET_CHARS, ms = COUNT_TIME_BUDGET_MS): CountBudget => ({
  chars,
  used: 0,
  deadline: performance.now() + ms,
});

const exhausted = (b: CountBudget): boolean =>
  b.chars <= 0 || (b.used >= ALWAYS_EXACT_CHARS && performance.now() > b.deadline);

/**
 * The piece as a string of its own. gpt-tokenizer keeps up to 100,000 pre-tokens in its merge cache,
 * each a substring of what it was given, and V8 makes a substring of 13 or more characters a view of
 * its parent: a slice of a prompt (and the prompt itself, or a completion text built from network
 * reads) would stay alive as long as one such pre-token is cached — 500 distinct 128 KB prompts kept
 * 63 MB of heap. Flattening `' ' + piece` makes a new string; its slice from 1 is the piece, and what
 * the cache can keep alive is then at most the piece (≤ MAX_PIECE_CHARS + 1 characters).
 */
const ownCopy = (piece: string): string => ` ${piece}`.slice(1);

// \s of the o200k pre-tokenizer, for the characters that matter (ASCII whitespace and NBSP).
const isSpace = (c: number) => c === 32 || (c >= 9 && c <= 13) || c === 0xa0;
const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/**
 * o200k token count of a text (special-token text such as "<|endoftext|>" counts as plain text), in
 * time linear in its length and bounded by the budget: exact for ordinary text, never below the
 * exact count. Whole texts of up to CACHE_MAX_TEXT characters that were counted exactly are cached.
 */
export function countTextTokens(text: string, budget: CountBudget = newBudget()): number {
  const len = text.length;
  if (len === 0) return 0;
  if (len <= CACHE_MAX_TEXT) {
    const hit = cache.get(text);
    if (hit !== undefined) {
      budget.chars -= len;
      budget.used += len;
      return hit;
    }
  }
  let n = 0;
  let i = 0;
  while (i < len) {
    if (exhausted(budget)) return n + Buffer.byteLength(i === 0 ? text : text.slice(i), 'utf8');
    const limit = Math.min(len, i + Math.min(budget.chars, MAX_PIECE_CHARS));
    let j = i;
    let run = 0;
    let lastSpace = -1;
    while (j < limit) {
      if (isSpace(text.charCodeAt(j))) {
        run = 0;
        lastSpace = j;
      } else if (++run > MAX_RUN_CHARS) break;
      j++;
    }
    // A piece that hit the size limit ends before its last whitespace, when it has one.
    if (j === limit && j < len && run <= MAX_RUN_CHARS && lastSpace > i) j = lastSpace;
    // Never split a surrogate pair.
    if (j < len && isLowSurrogate(text.charCodeAt(j))) j = j - 1 > i ? j - 1 : j + 1;
    n += countTokens(ownCopy(i === 0 && j >= len ? text : text.slice(i, j)), AS_TEXT);
    // A cut inside a run of non-space characters may lose a merge: count one token for it.
    if (j < len && !isSpace(text.charCodeAt(j)) && !isSpace(text.charCodeAt(j - 1))) n++;
    budget.chars -= j - i;
    budget.used += j - i;
    i = j;
  }
  if (len <= CACHE_MAX_TEXT) {
    if (cache.size >= CACHE_MAX_ENTRIES) cache.clear();
    cache.set(text, n);
  }
  return n;
}

export interface ContentPart {
  type?: string;
  text?: string;
  [key: string]: unknown;
}

export interface ChatMessageLike {
  role: string;
  content?: string | readonly ContentPart[] | null;
  name?: string;
  tool_calls?: unknown;
  tool_call_id?: string;
  [key: string]: unknown;
}

function contentTokens(content: unknown, budget: CountBudget): number {
  if (typeof content === 'string') return countTextTokens(content, budget);
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) {
    if (part === null || typeof part !== 'object') continue;
    const p = part as ContentPart;
    if (typeof p.text === 'string') n += countTextTokens(p.text, budget);
    else if (typeof p.type === 'string' && MEDIA_PART_TYPES.has(p.type))
      continue; // priced per model
    else n += countTextTokens(JSON.stringify(p), budget); // unknown part kinds: count their JSON
  }
  return n;
}

/**
 * Exact prompt count with OpenAI's chat overhead, before the safety margin. `toolsJson` is the JSON of
 * the request's tool (and legacy function) definitions: providers put them in the prompt and bill
 * them as input tokens, so they are counted as their JSON text (one budget with the messages).
 */
export function countPromptTokens(
  messages: readonly ChatMessageLike[],
  budget: CountBudget = newBudget(),
  toolsJson: string | null = null,
): number {
  let n = REPLY_PRIMING_TOKENS + (toolsJson === null ? 0 : countTextTokens(toolsJson, budget));
  for (const m of messages) {
    n += TOKENS_PER_MESSAGE + countTextTokens(String(m.role), budget) + contentTokens(m.content, budget);
    if (typeof m.name === 'string') n += TOKENS_PER_NAME + countTextTokens(m.name, budget);
    if (m.tool_calls !== undefined && m.tool_calls !== null)
      n += countTextTokens(JSON.stringify(m.tool_calls), budget);
    if (typeof m.tool_call_id === 'string') n += countTextTokens(m.tool_call_id, budget);
  }
  return n;
}

/** exact + 5%, rounded up, in integer arithmetic. */
export const withMargin = (exact: number): number => exact + Math.ceil((exact * SAFETY_MARGIN_PERCENT) / 100);

/**
 * Conservative prompt estimate for `messages` (content: string or parts with `text`) and the JSON of
 * the tool definitions, if any; one budget for all.
 */
export const estimatePromptTokens = (
  messages: readonly ChatMessageLike[],
  toolsJson: string | null = null,
): number => withMargin(countPromptTokens(messages, newBudget(), toolsJson));

/** Conservative estimate of the tokens of generated text (e.g. what a cut stream delivered). */
export const estimateCompletionTokens = (text: string): number => withMargin(countTextTokens(text));
