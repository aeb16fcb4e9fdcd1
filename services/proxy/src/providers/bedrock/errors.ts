import { failureOfStatus, providerRefusal } from '../provider-error';
import type { ClassifiedHttpError } from '../wire-format';

/**
 * Bedrock errors (`{"message": …}`, the type in the `x-amzn-ErrorType` header and, for some, the body's
 * `__type`). By status, as for OpenAI, refined where Bedrock's status misleads: a 400
 * ServiceQuotaExceededException ("Too many tokens…") is throttling (`rate_limited`), a 424
 * ModelErrorException (as a 502) and a 408 ModelTimeoutException are `unavailable`. Stream exceptions map to the status
 * of their type (throttlingException 429, serviceUnavailableException 503, …).
 */
const STREAM_STATUS: Record<string, number> = {
  throttlingException: 429,
  serviceQuotaExceededException: 429,
  modelNotReadyException: 429,
  serviceUnavailableException: 503,
  internalServerException: 500,
  modelStreamErrorException: 500,
  modelTimeoutException: 408,
  validationException: 400,
  accessDeniedException: 403,
};

export const bedrockErrorStatus = (type: string): number => STREAM_STATUS[type] ?? 500;

const THROTTLED = /throttl|quota|too many (tokens|requests)|rate exceeded/i;

export function classifyBedrockError(
  status: number,
  bodyText: string,
  providerName: string,
): ClassifiedHttpError {
  const throttled = status === 400 && THROTTLED.test(bodyText.slice(0, 2000));
  const effective = throttled ? 429 : status === 424 ? 502 : status;
  const { error, detail } = providerRefusal(effective, bodyText, providerName);
  if (error.metadata) error.metadata.upstream_status = status;
  return { failure: failureOfStatus(effective), summary: error, detail };
}
