import { failsOver, keyRejected } from '../../routing/policy';
import { providerRefusal } from '../provider-error';
import type { ClassifiedHttpError } from '../wire-format';

/**
 * An OpenAI-format provider's HTTP error answer: the status alone decides failover and key rotation
 * (routing/policy.ts); the body only feeds the summary (provider-error.ts) and the log.
 */
export function classifyHttpError(
  status: number,
  bodyText: string,
  providerName: string,
): ClassifiedHttpError {
  const { error, detail } = providerRefusal(status, bodyText, providerName);
  return { failover: failsOver(status), keyRejected: keyRejected(status), summary: error, detail };
}
