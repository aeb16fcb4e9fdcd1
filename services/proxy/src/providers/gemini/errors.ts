import { failureOfStatus, providerRefusal } from '../provider-error';
import type { ClassifiedHttpError } from '../wire-format';

/**
 * Gemini API errors (`{"error": {"code", "message", "status", "details": [{"reason"}]}}`) → what
 * happened. By status, as for OpenAI (provider-error.ts failureOfStatus), refined by the body where
 * Gemini's status misleads: a 400 `API_KEY_INVALID` (Gemini's answer to a wrong key) is a rejected
 * credential (the client sees the 502 of a credential problem), and a 400 `FAILED_PRECONDITION`
 * (billing not enabled, the region not served) is the gateway account's set-up there: `unavailable`.
 */
type Json = Record<string, unknown>;

function errorOf(bodyText: string): { status: string | null; reasons: string[] } {
  try {
    const e = (JSON.parse(bodyText) as Json).error as Json;
    const details = Array.isArray(e.details) ? (e.details as Json[]) : [];
    return {
      status: typeof e.status === 'string' ? e.status : null,
      reasons: details.map((d) => d.reason).filter((r): r is string => typeof r === 'string'),
    };
  } catch {
    return { status: null, reasons: [] };
  }
}

export function classifyGeminiError(
  status: number,
  bodyText: string,
  providerName: string,
): ClassifiedHttpError {
  const e = errorOf(bodyText);
  const badKey = status === 400 && (e.reasons.includes('API_KEY_INVALID') || e.status === 'UNAUTHENTICATED');
  const account = status === 400 && e.status === 'FAILED_PRECONDITION';
  const { error, detail } = providerRefusal(badKey ? 401 : account ? 503 : status, bodyText, providerName);
  if (error.metadata) error.metadata.upstream_status = status;
  const failure = badKey ? 'credentials' : account ? 'unavailable' : failureOfStatus(status);
  return { failure, summary: error, detail };
}
