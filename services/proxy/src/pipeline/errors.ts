import { AppError, safeText } from '@tollgate/errors';
import { DETAIL_MAX, summariseProviderError } from '../providers/provider-error';

/**
 * How a completion's answer ends, in one vocabulary for every door: every failure is an AppError of
 * the closed set (@tollgate/errors). Before the first byte the error writer answers it in the door's
 * envelope (`FrontDoor.errorBody`); after the 200 the door's stream sends the same error as its own
 * events (`FrontDoor.streamError`; chat: the §6 error chunk, doors/chat/events.ts). The provider's own
 * text (`detail`) goes to the log and the generation record only. Finish reasons are read here too.
 */

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
