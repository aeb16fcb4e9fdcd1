import type { AppError, ErrorType } from '@tollgate/errors';

/**
 * Errors on /responses in OpenAI's shape — `{"error": {"message", "type", "param", "code"}}` — which
 * the openai SDK, the AI SDK and the Agents SDK read (the SDKs raise by status and show `message`).
 * The gateway's own `metadata` (error_type, limits, provider name) rides along, as on the chat door.
 */

type Json = Record<string, unknown>;

/** The gateway's error types → OpenAI's `type` and `code`. */
const OPENAI_TYPE: Record<ErrorType, { type: string; code: string | null }> = {
  bad_request: { type: 'invalid_request_error', code: null },
  unauthorized: { type: 'authentication_error', code: 'invalid_api_key' },
  payment_required: { type: 'insufficient_quota', code: 'insufficient_quota' },
  forbidden: { type: 'permission_error', code: null },
  key_limit_exceeded: { type: 'insufficient_quota', code: 'insufficient_quota' },
  not_found: { type: 'invalid_request_error', code: 'not_found' },
  method_not_allowed: { type: 'invalid_request_error', code: 'method_not_allowed' },
  conflict: { type: 'invalid_request_error', code: 'conflict' },
  payload_too_large: { type: 'invalid_request_error', code: 'request_too_large' },
  unsupported_media_type: { type: 'invalid_request_error', code: 'unsupported_media_type' },
  rate_limited: { type: 'rate_limit_error', code: 'rate_limit_exceeded' },
  internal: { type: 'server_error', code: 'server_error' },
  provider_error: { type: 'server_error', code: 'provider_error' },
  service_unavailable: { type: 'server_error', code: 'service_unavailable' },
  timeout: { type: 'server_error', code: 'timeout' },
};

/** The field a 400 names: its `field` metadata, else the path before the message's first colon. */
function paramOf(err: AppError): string | null {
  if (typeof err.metadata.field === 'string') return err.metadata.field;
  if (err.type !== 'bad_request') return null;
  const m = /^([a-z_][\w.]*):\s/i.exec(err.message);
  return m ? (m[1] as string) : null;
}

/** The error object of an OpenAI error answer (and of a stream's `response.failed`). */
function openAIError(err: AppError): Json {
  const t = OPENAI_TYPE[err.type];
  return {
    message: err.message,
    type: t.type,
    param: paramOf(err),
    code: t.code,
    metadata: { ...err.metadata, error_type: err.type },
  };
}

/** An error before the head: its status and body. */
export function responsesErrorBody(err: AppError): { status: number; body: Json } {
  return { status: err.status, body: { error: openAIError(err) } };
}
