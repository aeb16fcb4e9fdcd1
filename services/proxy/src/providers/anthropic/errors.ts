import type { ProviderFailure } from '../wire-format';

/**
 * Anthropic error classification (pure). Anthropic answers `{"type":"error","error":{"type","message"}}`
 * with documented types per status (docs.claude.com/en/api/errors); 529 `overloaded_error` is
 * Anthropic's own status. The class says what happened (dispatch's failover policy decides what follows,
 * pipeline/dispatch.ts, from `failureOfClass`): `caller` (400/404/413/422: the request itself is
 * wrong), `credentials` (401/402/403 and a 400 `billing_error` — the gateway's key or account),
 * `rate_limited` (429), `overloaded` (529), `server` (500 and other 5xx, 408, 409).
 * The message is the provider's text: for logs and the generation record only (provider-error.ts
 * summarises what the client sees).
 */
export type AnthropicErrorClass = 'caller' | 'credentials' | 'rate_limited' | 'overloaded' | 'server';

export interface ClassifiedError {
  errorClass: AnthropicErrorClass;
  /** Anthropic's error type (`overloaded_error`, …) or null when the body had none. */
  providerType: string | null;
  /** The provider's message, or null. */
  detail: string | null;
}

const TYPE_CLASS: Record<string, AnthropicErrorClass> = {
  invalid_request_error: 'caller',
  not_found_error: 'caller',
  request_too_large: 'caller',
  authentication_error: 'credentials',
  permission_error: 'credentials',
  billing_error: 'credentials',
  rate_limit_error: 'rate_limited',
  overloaded_error: 'overloaded',
  api_error: 'server',
  timeout_error: 'server',
};

function statusClass(status: number): AnthropicErrorClass {
  if (status === 401 || status === 402 || status === 403) return 'credentials';
  if (status === 429) return 'rate_limited';
  if (status === 529) return 'overloaded';
  if (status === 408 || status === 409 || status >= 500) return 'server';
  return 'caller';
}

/** The error object of an Anthropic error body or stream `error` event (`{type, message}`), or null. */
function errorObject(payload: unknown): { type: string | null; message: string | null } | null {
  if (typeof payload !== 'object' || payload === null) return null;
  const e = (payload as { error?: unknown }).error;
  if (typeof e !== 'object' || e === null) return null;
  const { type, message } = e as { type?: unknown; message?: unknown };
  return {
    type: typeof type === 'string' ? type : null,
    message: typeof message === 'string' ? message : null,
  };
}

/**
 * An HTTP error answer (`status` ≥ 400) with its body text. The status decides the class (a body can
 * be an HTML page from a load balancer); the body only refines it where the status is ambiguous.
 */
export function classifyHttpError(status: number, bodyText: string): ClassifiedError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    parsed = null;
  }
  const e = errorObject(parsed);
  let errorClass = statusClass(status);
  // 400 with a spend-limit / billing type is the gateway account's problem, not the caller's.
  if (errorClass === 'caller' && e?.type === 'billing_error') errorClass = 'credentials';
  return {
    errorClass,
    providerType: e?.type ?? null,
    detail: e?.message ?? null,
  };
}

/** A stream `error` event's data (after the 200): the class only labels the §6 error chunk. */
export function classifyStreamError(data: unknown): ClassifiedError {
  const e = errorObject(data);
  const errorClass = (e?.type && TYPE_CLASS[e.type]) || 'server';
  return { errorClass, providerType: e?.type ?? null, detail: e?.message ?? null };
}

/** What a class says happened, in every wire format's terms (wire-format.ts ProviderFailure). */
export const failureOfClass = (c: AnthropicErrorClass): ProviderFailure =>
  c === 'overloaded' || c === 'server' ? 'unavailable' : c;

/** The HTTP-style code of a class, for the §6 error chunk of a stream error. */
export const classCode = (c: AnthropicErrorClass): number =>
  c === 'rate_limited'
    ? 429
    : c === 'overloaded'
      ? 529
      : c === 'credentials'
        ? 401
        : c === 'caller'
          ? 400
          : 500;
