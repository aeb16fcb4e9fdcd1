import { randomBytes } from 'node:crypto';

/**
 * Errors in the Anthropic API's own shape:
 * `{"type": "error", "error": {"type", "message"}, "request_id"}` (docs.claude.com/en/api/errors).
 */
export class AnthropicError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string = errorTypeFor(status),
  ) {
    super(message);
    this.name = 'AnthropicError';
  }

  toJSON(requestId: string) {
    return { type: 'error', error: { type: this.type, message: this.message }, request_id: requestId };
  }
}

/** The error `type` Anthropic documents for an HTTP status. */
function errorTypeFor(status: number): string {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

const DEFAULT_MESSAGES: Record<string, string> = {
  authentication_error: 'invalid x-api-key',
  billing_error: 'Your credit balance is too low to access the Anthropic API.',
  permission_error: 'Your API key does not have permission to use the specified resource.',
  not_found_error: 'The requested resource could not be found.',
  request_too_large: 'Request exceeds the maximum allowed number of bytes.',
  rate_limit_error: 'Number of request tokens has exceeded your per-minute rate limit.',
  overloaded_error: 'Overloaded',
  api_error: 'Internal server error',
  invalid_request_error: 'Simulated bad request.',
};

/** The error a `sim.error_status` asks for, with Anthropic's type and a default message. */
export function simulatedError(status: number, message?: string): AnthropicError {
  const type = errorTypeFor(status);
  return new AnthropicError(status, message ?? DEFAULT_MESSAGES[type]!, type);
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `prefix` + 24 base62 characters (msg_, toolu_, req_ ids). */
export function anthropicId(prefix: string): string {
  const bytes = randomBytes(24);
  let s = prefix;
  for (const b of bytes) s += ALPHABET[b % 62];
  return s;
}
