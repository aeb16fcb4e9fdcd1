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
