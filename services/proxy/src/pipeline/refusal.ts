import type { AppError, ErrorType } from '@tollgate/errors';
import { headerText, safeText } from '@tollgate/errors';
import type { RefusalEventV1, RefusalType } from '@tollgate/events';
import type { CachedKey } from '@tollgate/key-cache';
import type { ApiType } from '../doors/door';

/** What each error type counts as in the refusal roll-ups. */
const REFUSAL_TYPE: Record<ErrorType, RefusalType> = {
  key_limit_exceeded: 'limit',
  team_limit_exceeded: 'limit',
  payment_required: 'limit',
  rate_limited: 'rate_limit',
  unauthorized: 'auth',
  forbidden: 'auth',
  bad_request: 'bad_request',
  not_found: 'bad_request',
  method_not_allowed: 'bad_request',
  conflict: 'bad_request',
  payload_too_large: 'bad_request',
  unsupported_media_type: 'bad_request',
  provider_error: 'provider',
  timeout: 'provider',
  service_unavailable: 'provider',
  internal: 'other',
};

const MESSAGE_MAX = 300;
const MODEL_MAX = 200;

/**
 * A key refused before its record reached `res.locals` (disabled, revoked, expired, over its request
 * rate): the error carries the record so the refusal is counted for its key (auth/authenticate.ts).
 */
export function withRefusedKey<E extends AppError>(err: E, key: CachedKey): E {
  Object.defineProperty(err, 'refusedKey', { value: key, enumerable: false });
  return err;
}
export const refusedKeyOf = (err: unknown): CachedKey | undefined =>
  (err as { refusedKey?: CachedKey } | null)?.refusedKey;

/**
 * The refusal event of a request of a known key answered with `error` before anything was billed
 * (http/doors.ts publishes it on the usage exchange; billing counts it, docs/architecture.md).
 * Built from what the request already holds: no I/O.
 */
export function refusalEventOf(r: {
  requestId: string;
  key: CachedKey;
  api: ApiType;
  error: AppError;
  status: number;
  body: unknown;
  title: unknown;
  at: number;
}): RefusalEventV1 {
  const model = (r.body as { model?: unknown } | null | undefined)?.model;
  return {
    type: 'refusal',
    version: 1,
    id: r.requestId,
    account_id: r.key.accountId,
    key_id: r.key.id,
    api_type: r.api,
    model:
      typeof model === 'string' && model.length > 0
        ? safeText(model.replaceAll('\u0000', ''), MODEL_MAX)
        : null,
    app: typeof r.title === 'string' && r.title.length > 0 ? headerText(r.title, MODEL_MAX) : null,
    status: Math.min(599, Math.max(400, r.status)),
    error_type: REFUSAL_TYPE[r.error.type] ?? 'other',
    code: r.error.type,
    message: safeText(r.error.message.replaceAll('\u0000', ''), MESSAGE_MAX),
    finished_at: new Date(r.at).toISOString(),
  };
}
