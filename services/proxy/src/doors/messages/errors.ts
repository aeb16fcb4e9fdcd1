import { AppError } from '@tollgate/errors';
import { sseEvent } from './stream';

/**
 * The gateway's errors in Anthropic's shape, `{"type":"error","error":{"type","message"},"request_id"}`,
 * with Anthropic's error types and statuses. A key at its spend limit and an account out of credits
 * are 402 `billing_error`: Claude Code shows that message to its user as "API Error: 402 …" and does
 * not retry (a 403 would read "Failed to authenticate"; 429 and 5xx are retried).
 */
type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'billing_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'timeout_error'
  | 'overloaded_error';

export interface AnthropicError {
  status: number;
  type: AnthropicErrorType;
  message: string;
}

/** The Anthropic error type of an HTTP status (providers' relayed errors keep their status). */
function typeOfStatus(status: number): AnthropicErrorType {
  if (status === 401) return 'authentication_error';
  if (status === 402) return 'billing_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 504) return 'timeout_error';
  if (status === 529) return 'overloaded_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** An error of the gateway's closed set (or anything thrown) → its Anthropic status, type and message. */
export function anthropicError(err: unknown): AnthropicError {
  if (!(err instanceof AppError)) return { status: 500, type: 'api_error', message: 'Internal server error' };
  const message = err.message;
  switch (err.type) {
    case 'key_limit_exceeded':
    case 'team_limit_exceeded':
    case 'payment_required':
      return { status: 402, type: 'billing_error', message };
    case 'service_unavailable':
      // The gateway cannot take the request now (capacity, usage recording): Anthropic's overloaded.
      return { status: 529, type: 'overloaded_error', message };
    case 'internal':
      return { status: 500, type: 'api_error', message };
    default:
      return { status: err.status, type: typeOfStatus(err.status), message };
  }
}

export function errorBody(e: AnthropicError, requestId: string | null): Record<string, unknown> {
  return { type: 'error', error: { type: e.type, message: e.message }, request_id: requestId };
}

/** The stream's `error` event (a failure after the 200). */
export const errorEventOf = (e: AnthropicError): string =>
  sseEvent('error', { type: 'error', error: { type: e.type, message: e.message } });
