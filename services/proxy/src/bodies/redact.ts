/**
 * Opt-in bodies (issue 28): what a kept prompt or answer goes through before it leaves the proxy —
 * the configured patterns replaced (BODIES_REDACT), then a cut to BODIES_MAX_BYTES (UTF-8) with a
 * marker saying how much was dropped. Redaction runs first so a secret is never half-kept by the cut.
 */

export const REDACTED = '[REDACTED]';

/**
 * The default patterns (BODIES_REDACT unset): API keys (Tollgate's `sk-tg-v1-…`, OpenAI/Anthropic-style
 * `sk-…`, AWS access key ids, GitHub tokens), bearer tokens and e-mail addresses.
 */
export const DEFAULT_REDACT_PATTERNS: readonly string[] = [
  'sk-[A-Za-z0-9_-]{16,}',
  String.raw`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`,
  String.raw`\bgh[pousr]_[A-Za-z0-9]{20,}`,
  String.raw`\b[Bb]earer\s+[A-Za-z0-9._~+/=-]{16,}`,
  String.raw`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`,
];

/**
 * Characters past BODIES_MAX_BYTES that are still redacted before the cut: a match that redaction
 * shortens pulls later text into the kept part, and a secret cut by the look-at window could then be
 * half-kept; only a secret starting within this distance of the cut and longer than it can be.
 */
export const REDACT_SLACK = 4_096;

/** The marker appended to a cut body (after the kept bytes). */
const truncationMarker = (droppedBytes: number) => `\n[… truncated: ${droppedBytes} more bytes]`;

/** Compiles redaction patterns (flags `gu`); throws naming the first invalid one. */
export function compilePatterns(sources: readonly string[]): RegExp[] {
  return sources.map((source) => {
    try {
      return new RegExp(source, 'gu');
    } catch (err) {
      throw new Error(`invalid redaction pattern ${JSON.stringify(source)}: ${(err as Error).message}`);
    }
  });
}

/** `text` with every match of every pattern replaced by REDACTED. */
export function redact(text: string, patterns: readonly RegExp[]): string {
  let out = text;
  for (const re of patterns) {
    re.lastIndex = 0;
    out = out.replace(re, REDACTED);
  }
  return out;
}

/**
 * `text` cut to at most `maxBytes` UTF-8 bytes (never inside a character), the marker appended when
 * something was dropped. `extraDropped`: bytes dropped before (a capture bound), added to the marker.
 */
export function truncate(
  text: string,
  maxBytes: number,
  extraDropped = 0,
): { text: string; truncated: boolean } {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes && extraDropped === 0) return { text, truncated: false };
  let end = Math.min(maxBytes, bytes.length);
  // Back off continuation bytes (10xxxxxx) so the cut falls on a character boundary.
  while (end > 0 && end < bytes.length && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  const kept = bytes.subarray(0, end).toString('utf8');
  return { text: kept + truncationMarker(bytes.length - end + extraDropped), truncated: true };
}

/**
 * A body as it is kept: at most `maxBytes` + `REDACT_SLACK` characters are looked at (a bound on the
 * regex work), redacted, then cut to `maxBytes`. `droppedBefore`: bytes a capture bound already dropped.
 */
export function keepBody(
  text: string,
  options: { maxBytes: number; patterns: readonly RegExp[] },
  droppedBefore = 0,
): { text: string; truncated: boolean } {
  const window = options.maxBytes + REDACT_SLACK;
  let dropped = droppedBefore;
  let head = text;
  if (text.length > window) {
    head = text.slice(0, window);
    dropped += Buffer.byteLength(text.slice(window), 'utf8');
  }
  return truncate(redact(head, options.patterns), options.maxBytes, dropped);
}
