import { AppError, safeText } from '@tollgate/errors';
import { DETAIL_MAX, summariseProviderError } from '../providers/provider-error';

/**
 * How a completion's answer ends, in one vocabulary for both relays: every failure is an AppError of
 * the closed set (@tollgate/errors). Before the first byte the JSON and SSE relays answer it as the
 * ordinary error envelope (the express error handler); after the 200 the SSE relay sends the same
 * error as the §6 error chunk (`errorEvent`). The provider's own text (`detail`) goes to the log and
 * the generation record only. Finish reasons are read here too.
 */

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

/**
 * A provider's error event after the 200 (`code` its HTTP-style code, 502 when it had none): the
 * client sees the summary (provider-error.ts) with that code; `detail` is for the record.
 */
export function midStreamError(
  code: number,
  message: string | null,
  providerName: string,
): { error: AppError; detail: string } {
  const summary = summariseProviderError(code, message, providerName, ' mid-stream');
  return {
    error: new AppError(
      'provider_error',
      summary.message,
      { provider_name: providerName, upstream_status: code },
      code,
    ),
    detail: `Provider ${providerName} failed mid-stream: ${safeText(message ?? 'Provider error', DETAIL_MAX)}`,
  };
}

/** A stream that ended without a finish reason or [DONE]. */
export const streamEndedEarly = (providerName: string): AppError =>
  new AppError('provider_error', `Provider ${providerName} ended the stream before it finished`, {
    provider_name: providerName,
  });

/** A JSON answer that is not a chat completion in the provider's wire format. */
export const invalidResponse = (providerName: string): AppError =>
  new AppError('provider_error', `Provider ${providerName} returned an invalid response`, {
    provider_name: providerName,
  });

/** The first string `finish_reason` of a completion's or chunk's choices, or null. */
export function finishReasonOf(choices: unknown): string | null {
  if (!Array.isArray(choices)) return null;
  for (const ch of choices) {
    const reason = (ch as { finish_reason?: unknown } | null)?.finish_reason;
    if (typeof reason === 'string') return reason;
  }
  return null;
}

/** The finish reason of a chunk's JSON text (null when it has none or is not JSON). */
export function finishReasonOfChunk(text: string): string | null {
  try {
    return finishReasonOf((JSON.parse(text) as { choices?: unknown } | null)?.choices);
  } catch {
    return null;
  }
}
