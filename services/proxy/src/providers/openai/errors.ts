import { failureOfStatus, providerRefusal } from '../provider-error';
import type { ClassifiedHttpError } from '../wire-format';

/**
 * An OpenAI-format provider's HTTP error answer: the status alone says what happened
 * (provider-error.ts failureOfStatus); the body only feeds the summary and the log.
 */
export function classifyHttpError(
  status: number,
  bodyText: string,
  providerName: string,
): ClassifiedHttpError {
  const { error, detail } = providerRefusal(status, bodyText, providerName);
  return { failure: failureOfStatus(status), summary: error, detail };
}
