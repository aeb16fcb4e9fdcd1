import type { AppError } from '@tollgate/errors';

/** The §6 chunk's `metadata.error_type`: `timeout` (504), `server` (other 5xx), else the error's type. */
const streamErrorType = (err: AppError): string =>
  err.status === 504 ? 'timeout' : err.status >= 500 ? 'server' : err.type;

/** The §6 error chunk (finish_reason `error`, top-level `error`) as one SSE event. */
export function errorEvent(err: AppError, providerName: string): string {
  const chunk = JSON.stringify({
    id: null,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    choices: [{ index: 0, delta: {}, finish_reason: 'error' }],
    error: {
      code: err.status,
      message: err.message,
      metadata: { error_type: streamErrorType(err), provider_name: providerName },
    },
  });
  return `data: ${chunk}\n\n`;
}

/** The last event of every stream. */
export const DONE_EVENT = 'data: [DONE]\n\n';
