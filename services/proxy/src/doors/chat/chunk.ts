/**
 * Cheap string surgery on provider chunks. A JSON string value can never contain an unescaped `"`,
 * so a quoted key such as `"usage":` found anywhere in the text is a real key (of the chunk or of a
 * nested object), never generated content. That lets the relay classify and rewrite content chunks
 * without JSON.parse; anything unusual falls back to parse + stringify (correctness first).
 */

const ID_HEAD = '{"id":"';
const MODEL_KEY = '"model":"';

export interface Rewritten {
  text: string;
  /** The provider's own id of the chunk. */
  upstreamId: string | null;
}

/**
 * Sets the top-level `id` to the request id and `model` to the catalog model id.
 * Fast path (no parse): the chunk starts with `{"id":"<no escapes>"`, which is how OpenAI-style
 * servers serialise chunks; `"model":"…"` is then the first model key after it. Otherwise the chunk
 * is parsed and re-serialised. Returns null for a chunk that is not JSON (relayed untouched).
 */
export function rewriteChunk(
  data: string,
  id: string,
  model: string,
  /** `model` escaped for a JSON string (pass it precomputed when it may contain `"` or `\\`). */
  modelEscaped = model,
): Rewritten | null {
  if (data.startsWith(ID_HEAD)) {
    const close = data.indexOf('"', ID_HEAD.length);
    const upstreamId = close === -1 ? '' : data.slice(ID_HEAD.length, close);
    if (close !== -1 && !upstreamId.includes('\\')) {
      let rest = data.slice(close);
      const m = rest.indexOf(MODEL_KEY);
      if (m !== -1) {
        const valueStart = m + MODEL_KEY.length;
        const valueEnd = rest.indexOf('"', valueStart);
        if (valueEnd !== -1 && rest.lastIndexOf('\\', valueEnd) < valueStart) {
          rest = rest.slice(0, valueStart) + modelEscaped + rest.slice(valueEnd);
        }
      }
      return { text: ID_HEAD + id + rest, upstreamId };
    }
  }
  return rewriteByParse(data, id, model);
}

function rewriteByParse(data: string, id: string, model: string): Rewritten | null {
  let obj: Record<string, unknown>;
  try {
    obj = JSON.parse(data) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return null;
  const upstreamId = typeof obj.id === 'string' ? obj.id : null;
  obj.id = id;
  if ('model' in obj) obj.model = model;
  return { text: JSON.stringify(obj), upstreamId };
}

/** Index just after `"<key>":` and any spaces, or -1. */
function valueStart(data: string, key: string): number {
  const i = data.indexOf(key);
  if (i === -1) return -1;
  let j = i + key.length;
  while (data.charCodeAt(j) === 32) j++;
  return j;
}

/** True when the chunk carries a non-null `usage` object (OpenAI sends `"usage":null` on content chunks). */
export function hasUsage(data: string): boolean {
  const j = valueStart(data, '"usage":');
  return j !== -1 && data.charCodeAt(j) === 123; /* '{' */
}

const NULL_USAGE = /,\s*"usage"\s*:\s*null(?=\s*[,}])|"usage"\s*:\s*null\s*,?/;

/**
 * Removes a `"usage": null` member. OpenAI-style servers put one on every content chunk once
 * `include_usage` is set; OpenRouter never sends it and its SDK rejects it, so content chunks go out
 * without `usage` and the one usage chunk stays the last event before [DONE]. One `indexOf` on the
 * common path; the regex runs only on chunks that carry the member.
 */
export function stripNullUsage(text: string): string {
  if (!text.includes('"usage"')) return text;
  return text.replace(NULL_USAGE, '');
}

/** True when the chunk may carry an `error` object (confirmed by parsing). */
export function mayHaveError(data: string): boolean {
  const j = valueStart(data, '"error":');
  return j !== -1 && data.charCodeAt(j) === 123;
}

/** True when some choice of the chunk has a non-null finish_reason. */
export function hasFinishReason(data: string): boolean {
  const j = valueStart(data, '"finish_reason":');
  return j !== -1 && data.charCodeAt(j) === 34; /* '"' */
}

const DATA_ID_HEAD = Buffer.from(`data: ${ID_HEAD}`);
const MODEL_KEY_BYTES = Buffer.from(MODEL_KEY);
const USAGE_NULL = Buffer.from('"usage":null');
/** `"usage"`: the first 7 bytes of USAGE_NULL. */
const USAGE_NAME_LENGTH = 7;
const EVENT_END = Buffer.from('\n\n');
const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;

/** The byte sink of the rewrite (byte-out.ts `ByteOut`). */
interface ByteSink {
  bytes(buf: Buffer, start: number, end: number): void;
  whole(buf: Buffer): void;
  /** A string the caller knows is ASCII. */
  ascii(s: string): void;
  text(s: string): void;
}

/** First index in [from, end) where `needle[0, n)` occurs in buf, or -1 (a JS loop: no native call). */
function find(buf: Buffer, needle: Buffer, n: number, from: number, end: number): number {
  const first = needle[0];
  const last = end - n;
  outer: for (let i = from; i <= last; i++) {
    if (buf[i] !== first) continue;
    for (let k = 1; k < n; k++) if (buf[i + k] !== needle[k]) continue outer;
    return i;
  }
  return -1;
}

function startsWith(buf: Buffer, at: number, end: number, prefix: Buffer, from: number): boolean {
  const n = prefix.length - from;
  if (end - at < n) return false;
  for (let k = 0; k < n; k++) if (buf[at + k] !== prefix[from + k]) return false;
  return true;
}

/** Key positions in an event, found by one pass over it (chunk-scan.ts `ChunkScan`). */
interface KeyPositions {
  usageName: number;
  model: number;
}

/** Model ids (the catalog's, bounded) as bytes. */
const modelBytes = new Map<string, Buffer>();
function bytesOf(model: string): Buffer {
  let b = modelBytes.get(model);
  if (b === undefined) {
    b = Buffer.from(model);
    modelBytes.set(model, b);
  }
  return b;
}

/**
 * `rewriteChunk(stripNullUsage(data))` on the provider's bytes, for the layout it has a fast path for
 * (`{"id":"<no escapes>"`, then the first `"model":"` and, if any, a `"usage":null` member written
 * without spaces and followed by `,` or `}`): appends `data: <rewritten>\n\n` to `out` as ranges of
 * `buf` plus the request id (ASCII) and model, copying nothing itself. Anything else (another layout,
 * spaces around the null usage, an id with escapes) returns false with nothing appended: the caller
 * takes the string path, whose result is the same text the byte path would have produced where both
 * apply (chunk-bytes.test.ts). Searches are JS loops bounded by the chunk (no native call per key).
 */
export class ChunkBytes {
  /** The provider's id of the last chunk rewritten: bytes [idStart, idEnd) of its read. */
  idStart = 0;
  idEnd = 0;

  rewrite(
    buf: Buffer,
    s: number,
    e: number,
    id: string,
    model: string,
    out: ByteSink,
    /** Where the event's first `"usage"` and first `"model":"` after the id are, when known (chunk-scan.ts). */
    found?: KeyPositions,
  ): boolean {
    if (!startsWith(buf, s, e, DATA_ID_HEAD, 6)) return false;
    const idStart = s + ID_HEAD.length;
    let close = -1;
    for (let i = idStart; i < e; i++) {
      const b = buf[i];
      if (b === QUOTE) {
        close = i;
        break;
      }
      if (b === BACKSLASH) return false;
    }
    if (close === -1) return false;
    // `"usage":null`, stripped (the regex of stripNullUsage: with the comma before it, else after it).
    let stripStart = -1;
    let stripEnd = -1;
    const u = found ? found.usageName : find(buf, USAGE_NULL, USAGE_NAME_LENGTH, s, e);
    if (u !== -1) {
      const nullEnd = u + USAGE_NULL.length;
      if (u <= close || nullEnd >= e || !startsWith(buf, u, e, USAGE_NULL, 0)) return false;
      const after = buf[nullEnd];
      if (after !== COMMA && after !== CLOSE_BRACE) return false;
      const before = buf[u - 1];
      if (before === COMMA) {
        stripStart = u - 1;
        stripEnd = nullEnd;
      } else if (before === OPEN_BRACE) {
        stripStart = u;
        stripEnd = nullEnd + (after === COMMA ? 1 : 0);
      } else return false;
    }
    // The first `"model":"` after the id, replaced unless its value has escapes.
    let valueStart = -1;
    let valueEnd = -1;
    const m = found ? found.model : find(buf, MODEL_KEY_BYTES, MODEL_KEY_BYTES.length, close, e);
    if (m !== -1) {
      const vs = m + MODEL_KEY_BYTES.length;
      let ve = -1;
      let escaped = false;
      for (let i = vs; i < e; i++) {
        const b = buf[i];
        if (b === QUOTE) {
          ve = i;
          break;
        }
        if (b === BACKSLASH) escaped = true;
      }
      if (ve !== -1 && !escaped) {
        valueStart = vs;
        valueEnd = ve;
      }
      // The stripped member and the model member never overlap in JSON; in anything else, the string path.
      const modelEnd = ve !== -1 ? ve + 1 : vs;
      if (stripStart !== -1 && stripStart < modelEnd && stripEnd > m) return false;
    }
    this.idStart = idStart;
    this.idEnd = close;
    out.whole(DATA_ID_HEAD);
    out.ascii(id);
    let at = close;
    if (valueStart !== -1 && (stripStart === -1 || valueStart < stripStart)) {
      out.bytes(buf, at, valueStart);
      out.whole(bytesOf(model));
      at = valueEnd;
      valueStart = -1;
    }
    if (stripStart !== -1) {
      out.bytes(buf, at, stripStart);
      at = stripEnd;
    }
    if (valueStart !== -1) {
      out.bytes(buf, at, valueStart);
      out.whole(bytesOf(model));
      at = valueEnd;
    }
    out.bytes(buf, at, e);
    out.whole(EVENT_END);
    return true;
  }
}

/** Bytes [start, end) of buf as UTF-8 text: Buffer#toString's own binding, without its argument checks. */
export const utf8: (buf: Buffer, start: number, end: number) => string =
  typeof (Buffer.prototype as { utf8Slice?: unknown }).utf8Slice === 'function'
    ? (buf, start, end) =>
        (buf as unknown as { utf8Slice(s: number, e: number): string }).utf8Slice(start, end)
    : (buf, start, end) => buf.toString('utf8', start, end);

const DATA = 'data: ';
const DATA_END = '\n\n';

/** `content`'s answer for an event that is not JSON (relayed as it came). */
export const NOT_JSON = false;

/**
 * The chat relay's one chunk rewriter: what the client gets of a provider chunk — `id` → the request
 * id, `model` → the catalog id, a `"usage": null` member dropped — appended to `out` as one SSE event.
 * A content chunk takes the byte path (`ChunkBytes`, no string made) when it has the layout that path
 * covers and the request id is ASCII, else the string path (`rewriteChunk` on its text): the same text
 * either way (chunk-bytes.test.ts). The usage chunk's content part (`usageContent`) is rewritten here too.
 */
export class ChunkRewriter {
  private readonly bytes = new ChunkBytes();

  /**
   * One content chunk, [start, end) of `buf` (`data`: the same bytes as text, or null: decoded here
   * if the byte path declines). Returns the provider's
   * id of the chunk when `wantId` (null when it has none), null otherwise, or NOT_JSON when the event
   * is not JSON (then relayed as it came, one data line per line).
   */
  content(
    buf: Buffer,
    start: number,
    end: number,
    known: string | null,
    ids: { id: string; model: string; asciiId: boolean },
    wantId: boolean,
    out: ByteSink,
    found?: KeyPositions,
  ): string | null | typeof NOT_JSON {
    const b = this.bytes;
    if (ids.asciiId && b.rewrite(buf, start, end, ids.id, ids.model, out, found)) {
      return wantId ? utf8(buf, b.idStart, b.idEnd) : null;
    }
    const data = known ?? utf8(buf, start, end);
    const rewritten = rewriteChunk(stripNullUsage(data), ids.id, ids.model);
    if (rewritten === null) {
      out.text(DATA);
      out.text(data.replaceAll('\n', '\ndata: '));
      out.text(DATA_END);
      return NOT_JSON;
    }
    out.text(DATA);
    out.text(rewritten.text);
    out.text(DATA_END);
    return wantId ? rewritten.upstreamId : null;
  }

  /** The content part of a usage chunk that also carries choices: its text with our ids, without usage. */
  usageContent(chunk: Record<string, unknown>, id: string, model: string): string {
    const content: Record<string, unknown> = { ...chunk, id, model };
    delete content.usage;
    return JSON.stringify(content);
  }
}
