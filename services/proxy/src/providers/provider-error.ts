import { AppError, type ErrorMetadata, safeText } from '@tollgate/errors';
import type { ProviderFailure } from './wire-format';

/**
 * Provider error bodies are summarised, never relayed verbatim (issue 14): they can carry the
 * gateway's organisation and project ids, quota figures and key fragments. The client gets the
 * status and a safe message; the provider's own text (the detail) goes to the logs and, for a
 * request that produced something, to its generation record's `error`.
 *
 * - 401/403: the gateway's provider credentials are wrong: 502, never the provider's text;
 * - 404: model or endpoint unknown to the provider (catalog error): 502, no text;
 * - 429: the provider is rate limiting the gateway: 429, no text (quota figures); except a 429 that
 *   says the request itself is too large for the provider's rate limit (OpenAI: "Request too large
 *   for … on tokens per min"): 413, no text, `metadata.reason: "request_too_large"` — the caller's
 *   request, not the provider's or the key's state: it neither counts against the provider's circuit
 *   nor rests the key (pipeline/dispatch.ts), so a tenant cannot trip them for everyone;
 * - other 4xx: the request itself was refused: the status, with the provider's message cut to
 *   CLIENT_DETAIL_MAX code points and account identifiers redacted, so the caller can fix it;
 * - 5xx and anything else: 502, no text.
 */
const CLIENT_DETAIL_MAX = 200;
/** Longest provider text kept for logs and the generation record. */
export const DETAIL_MAX = 500;

/** The provider's message from its error body (OpenAI shape, or a bare `message`/`error` string). */
function providerMessage(bodyText: string): string | null {
  try {
    const parsed = JSON.parse(bodyText) as { error?: { message?: unknown } | string; message?: unknown };
    const m =
      typeof parsed.error === 'object' && parsed.error !== null
        ? parsed.error.message
        : (parsed.error ?? parsed.message);
    return typeof m === 'string' && m.length > 0 ? safeText(m, DETAIL_MAX) : null;
  } catch {
    return null;
  }
}

// Account identifiers that providers put in messages: org-…, proj_…, user-…, sk-…, key_…, acct_….
const IDENTIFIER = /\b(org|proj|project|user|sk|key|acct|account)([-_])[A-Za-z0-9_-]{4,}/gi;

const redact = (m: string): string => m.replace(IDENTIFIER, '$1$2[redacted]');

export interface ProviderErrorSummary {
  /** HTTP status for the client (relayed 4xx, else 502). */
  status: number;
  /** What the client sees. */
  message: string;
}

/** A provider message saying the request alone exceeds a rate limit (not that the limit is used up). */
const requestTooLarge = (detail: string | null): boolean =>
  detail !== null && /\brequest too large\b/i.test(detail);

/** The reason of a refusal that is the request's own size, not the provider's or the key's state. */
export const REQUEST_TOO_LARGE = 'request_too_large';

/**
 * What an HTTP error status says happened (wire-format.ts ProviderFailure), as OpenAI-format providers
 * mean it; an adapter whose provider's status misleads refines it from the body (anthropic/, gemini/,
 * bedrock/, azure/).
 */
export function failureOfStatus(status: number): ProviderFailure {
  if (status === 401 || status === 402 || status === 403) return 'credentials';
  if (status === 429) return 'rate_limited';
  if (status === 408 || status === 409 || status >= 500) return 'unavailable';
  return 'caller';
}

/** The client-facing status and message for a provider error of `status` (see the module doc). */
export function summariseProviderError(
  status: number,
  detail: string | null,
  providerName: string,
  when = '',
): ProviderErrorSummary {
  const head = `Provider ${providerName}${when}`;
  if (status === 401 || status === 403) {
    return { status: 502, message: `${head} rejected the gateway's credentials (HTTP ${status})` };
  }
  if (status === 404) {
    return { status: 502, message: `${head} does not know the model or endpoint (HTTP 404)` };
  }
  if (status === 429 && requestTooLarge(detail)) {
    return {
      status: 413,
      message: `${head} refused the request as too large for its rate limit (HTTP 429): shorten the prompt or lower max_tokens`,
    };
  }
  if (status === 429) {
    return { status: 429, message: `${head} is rate limiting requests (HTTP 429); retry later` };
  }
  if (status >= 400 && status < 500) {
    const m = detail ? `: ${redact(safeText(detail, CLIENT_DETAIL_MAX))}` : '';
    return { status, message: `${head} rejected the request (HTTP ${status})${m}` };
  }
  return { status: 502, message: `${head} failed (HTTP ${status})` };
}

/**
 * A provider's HTTP error answer (before any byte was sent to the client) as the gateway error:
 * `provider_error` with the summarised status and message; the provider's own text is `detail`, for
 * the logs and the generation record, never for the client.
 */
export function providerRefusal(
  status: number,
  bodyText: string,
  providerName: string,
): { error: AppError; detail: string | null } {
  const detail = providerMessage(bodyText);
  const summary = summariseProviderError(status, detail, providerName);
  const metadata: ErrorMetadata = { provider_name: providerName, upstream_status: status };
  if (status === 429 && summary.status === 413) metadata.reason = REQUEST_TOO_LARGE;
  const error = new AppError('provider_error', summary.message, metadata, summary.status);
  return { error, detail };
}
