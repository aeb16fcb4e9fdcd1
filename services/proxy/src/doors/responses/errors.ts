import type { AppError, ErrorType } from '@tollgate/errors';

/**
 * Errors on /responses in OpenAI's shape — `{"error": {"message", "type", "param", "code"}}` — which
 * the openai SDK, the AI SDK and the Agents SDK read (they raise by status and show `message`; the
 * openai SDK exposes `type`, `param` and `code`). It is also the gateway's envelope: `code` is the
 * HTTP status (as OpenRouter answers OpenAI clients; the SDKs accept a number there) and `metadata`
 * carries `error_type` and the rest, as on every other route; `type` and `param` are OpenAI's.
 */

type Json = Record<string, unknown>;

/** The gateway's error types → OpenAI's `type`. */
const OPENAI_TYPE: Record<ErrorType, string> = {
  bad_request: 'invalid_request_error',
  unauthorized: 'authentication_error',
  payment_required: 'insufficient_quota',
  forbidden: 'permission_error',
  key_limit_exceeded: 'insufficient_quota',
  team_limit_exceeded: 'insufficient_quota',
  not_found: 'invalid_request_error',
  method_not_allowed: 'invalid_request_error',
  conflict: 'invalid_request_error',
  payload_too_large: 'invalid_request_error',
  unsupported_media_type: 'invalid_request_error',
  rate_limited: 'rate_limit_error',
  internal: 'server_error',
  provider_error: 'server_error',
  service_unavailable: 'server_error',
  timeout: 'server_error',
};

/** The field a 400 names: its `field` metadata, else the path before the message's first colon. */
function paramOf(err: AppError): string | null {
  if (typeof err.metadata.field === 'string') return err.metadata.field;
  if (err.type !== 'bad_request') return null;
  const m = /^([a-z_][\w.]*):\s/i.exec(err.message);
  return m ? (m[1] as string) : null;
}

/** The error object of an OpenAI error answer (and of a stream's `response.failed`). */
export function openAIError(err: AppError): Json {
  return { ...err.toBody(), type: typeOf(err), param: paramOf(err) };
}

/** OpenAI's `type`; a provider's own 4xx relayed (`provider_error` with its status) is typed by that status. */
function typeOf(err: AppError): string {
  if (err.type !== 'provider_error' || err.status >= 500) return OPENAI_TYPE[err.type];
  if (err.status === 401) return 'authentication_error';
  if (err.status === 403) return 'permission_error';
  if (err.status === 429) return 'rate_limit_error';
  return 'invalid_request_error';
}

/** An error before the head: its status and body. */
export function responsesErrorBody(err: AppError): { status: number; body: Json } {
  return { status: err.status, body: { error: openAIError(err) } };
}

/**
 * An error after the head, before any Response event: the stream's `error` event (the openai SDK
 * raises it as an APIError).
 */
export function openAIErrorEvent(err: AppError): string {
  const e = openAIError(err);
  const data = JSON.stringify({
    type: 'error',
    sequence_number: 0,
    code: e.type,
    message: e.message,
    param: e.param,
  });
  return `event: error\ndata: ${data}\n\n`;
}
