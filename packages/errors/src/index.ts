/**
 * The one closed set of error types Tollgate answers with, the HTTP status of each, and the
 * envelope every service writes: {"error": {"code", "message", "metadata": {"error_type", ...}}}.
 * Routes throw AppError; one express error handler (in @tollgate/http) writes the envelope.
 */
export const errorStatus = {
  bad_request: 400,
  unauthorized: 401,
  payment_required: 402,
  forbidden: 403,
  key_limit_exceeded: 403,
  team_limit_exceeded: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  provider_error: 502,
  service_unavailable: 503,
  timeout: 504,
} as const;

export type ErrorType = keyof typeof errorStatus;

export type ErrorMetadata = { [key: string]: string | number | boolean | null | undefined };

export interface ErrorBody {
  code: number;
  message: string;
  metadata: { error_type: string } & ErrorMetadata;
}

export interface ErrorEnvelope {
  error: ErrorBody;
}

export class AppError extends Error {
  readonly type: ErrorType;
  readonly status: number;
  readonly metadata: ErrorMetadata;

  constructor(type: ErrorType, message: string, metadata: ErrorMetadata = {}, status?: number) {
    super(message);
    this.name = 'AppError';
    this.type = type;
    this.status = status ?? errorStatus[type];
    this.metadata = metadata;
  }

  toBody(): ErrorBody {
    return {
      code: this.status,
      message: this.message,
      metadata: { ...this.metadata, error_type: this.type },
    };
  }

  toEnvelope(): ErrorEnvelope {
    return { error: this.toBody() };
  }
}

export const isAppError = (err: unknown): err is AppError => err instanceof AppError;

export const badRequest = (message: string, metadata?: ErrorMetadata) =>
  new AppError('bad_request', message, metadata);
export const notFound = (message = 'Not found', metadata?: ErrorMetadata) =>
  new AppError('not_found', message, metadata);
export const unauthorized = (message = 'Missing or invalid API key') => new AppError('unauthorized', message);
export const forbiddenScope = (requiredScope: string) =>
  new AppError('forbidden', `This endpoint requires a key with scope '${requiredScope}'`, {
    required_scope: requiredScope,
  });

/** The generic body for an unexpected failure: never err.message. */
export const internalErrorEnvelope = (): ErrorEnvelope =>
  new AppError('internal', 'Internal server error').toEnvelope();

/** Builds the `field` message zod issues turn into: "limit: expected a number". */
export function describeIssues(issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>) {
  const first = issues[0];
  if (!first) return 'Invalid request';
  const field = first.path.map(String).join('.');
  return field ? `${field}: ${first.message}` : first.message;
}

/** `String.prototype.toWellFormed` (ES2024; the workspace's lib is ES2023). */
const wellFormed = (s: string): string => (s as string & { toWellFormed(): string }).toWellFormed();

/**
 * `text` as a well-formed string (lone surrogates become U+FFFD) of at most `max` UTF-16 units,
 * never cutting a surrogate pair in half: safe for JSON, logs and Postgres `jsonb`.
 */
export function safeText(text: string, max = Number.POSITIVE_INFINITY): string {
  let s = text;
  if (s.length > max) {
    let cut = max;
    const c = s.charCodeAt(cut - 1);
    if (c >= 0xd800 && c <= 0xdbff) cut--; // the cut would leave a high surrogate alone
    s = s.slice(0, cut);
  }
  return wellFormed(s);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function onlyBytes(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0xff) return false;
  return true;
}

/**
 * An HTTP header's text as the client meant it. Node's parser reads header bytes as Latin-1 (one
 * character per byte), so a UTF-8 `X-Title: Café bot ✓` arrives as `CafÃ© bot â\u009c\u0093`. When
 * every character is a byte and the bytes are valid UTF-8 they are decoded as UTF-8; anything else
 * (real Latin-1, or already-decoded text) is kept as it is. Then `safeText(…, max)`.
 */
export function headerText(value: string, max = Number.POSITIVE_INFINITY): string {
  let s = value;
  // Pure ASCII needs nothing; a character above 0xFF means the text was never bytes.
  if (/[\u0080-\u00ff]/.test(s) && onlyBytes(s)) {
    try {
      s = utf8.decode(Buffer.from(s, 'latin1'));
    } catch {
      // not UTF-8: Latin-1 it is
    }
  }
  return safeText(s, max);
}
