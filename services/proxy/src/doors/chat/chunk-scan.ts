/**
 * What the chat relay reads of a provider event, from its bytes in one pass (issue 30: CPU per relayed
 * chunk): the same answers as chunk.ts `mayHaveError`, `hasUsage` and `hasFinishReason` and usage.ts
 * `keptPart` give on the event's text, without decoding the event into a string first. Each key is the
 * first occurrence of its quoted name, as `indexOf` finds it on the text: the keys are ASCII, and no
 * byte of a multi-byte UTF-8 character is ASCII, so a key's bytes are found where its characters are.
 * chunk-scan.test.ts compares every answer with the text functions'.
 */

const QUOTE = 34;
const SPACE = 32;
const OPEN_BRACE = 123;
const OPEN_BRACKET = 91;
/** usage.ts SEP: a kept part that holds it is not JSON. */
const RS = 0x1e;

const ERROR_KEY = Buffer.from('"error":');
const USAGE_KEY = Buffer.from('"usage":');
/** `"usage"` (chunk.ts `ChunkBytes` looks for its `:null`). */
const USAGE_NAME = 7;
const MODEL_KEY = Buffer.from('"model":"');
const FINISH_KEY = Buffer.from('"finish_reason":');
const CHOICES_KEY = Buffer.from('"choices":');
const DONE = Buffer.from('[DONE]');

/** `key[0, n)` (which starts with a quote) at `at`, within [at, end). */
function keyAt(buf: Buffer, at: number, end: number, key: Buffer, n = key.length): boolean {
  if (end - at < n) return false;
  for (let k = 1; k < n; k++) if (buf[at + k] !== key[k]) return false;
  return true;
}

/** The byte after `"<key>":` at `at` and any spaces (as chunk.ts `valueStart`); -1 past the end. */
function valueByte(buf: Buffer, at: number, end: number): number {
  let j = at;
  while (j < end && buf[j] === SPACE) j++;
  return j < end ? (buf[j] as number) : -1;
}

/**
 * One event's findings, filled by `scan` (one instance serves every stream: it is read before
 * anything else is scanned).
 */
export class ChunkScan {
  /** The event is `[DONE]`. */
  done = false;
  /** `mayHaveError`: the first `"error":` holds an object. */
  error = false;
  /** `hasUsage`: the first `"usage":` holds an object. */
  usage = false;
  /** `hasFinishReason`: the first `"finish_reason":` holds a string. */
  finish = false;
  /** Where `keptPart`'s text starts (byte index), or -1 when it is null (the part holds U+001E). */
  kept = -1;
  /**
   * For `ChunkBytes.rewrite` (`found`): the first `"usage"` of the event, and the first `"model":"` after
   * its second quote (where a chunk that starts `{"id":"` ends its id); -1: none.
   */
  usageName = -1;
  model = -1;

  scan(buf: Buffer, s: number, e: number): void {
    this.done = e - s === DONE.length && DONE.compare(buf, s, e) === 0;
    let error = -1;
    let usage = -1;
    let finish = -1;
    let choices = -1;
    /** First `{` or `[` after the first byte. */
    let nested = -1;
    /** Last U+001E. */
    let rs = -1;
    let usageName = -1;
    let model = -1;
    /** Quotes before `i`, up to 3: from the 4th on (the end of the id of `{"id":"…"`), a `"model":"` counts. */
    let quotes = 0;
    for (let i = s; i < e; i++) {
      const b = buf[i];
      if (b === QUOTE) {
        const c = buf[i + 1];
        if (c === 0x65 /* e */) {
          if (error === -1 && keyAt(buf, i, e, ERROR_KEY)) error = i + ERROR_KEY.length;
        } else if (c === 0x75 /* u */) {
          if (usageName === -1 && keyAt(buf, i, e, USAGE_KEY, USAGE_NAME)) usageName = i;
          if (usage === -1 && keyAt(buf, i, e, USAGE_KEY)) usage = i + USAGE_KEY.length;
        } else if (c === 0x6d /* m */) {
          if (model === -1 && quotes === 3 && keyAt(buf, i, e, MODEL_KEY)) model = i;
        } else if (c === 0x66 /* f */) {
          if (finish === -1 && keyAt(buf, i, e, FINISH_KEY)) finish = i + FINISH_KEY.length;
        } else if (c === 0x63 /* c */) {
          if (choices === -1 && keyAt(buf, i, e, CHOICES_KEY)) choices = i;
        }
        if (quotes < 3) quotes++;
      } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
        if (nested === -1 && i > s) nested = i;
      } else if (b === RS) rs = i;
    }
    this.error = error !== -1 && valueByte(buf, error, e) === OPEN_BRACE;
    this.usage = usage !== -1 && valueByte(buf, usage, e) === OPEN_BRACE;
    this.finish = finish !== -1 && valueByte(buf, finish, e) === QUOTE;
    let kept = s;
    if (choices > s && buf[s] === OPEN_BRACE && (nested === -1 || nested > choices)) kept = choices;
    this.kept = rs >= kept ? -1 : kept;
    this.usageName = usageName;
    this.model = model;
  }
}
