import { isUuid, type TeamObject } from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';
import { type LimitReset, toNumber, toUnits } from '@tollgate/money';
import type { TeamWithKeys } from './teams.repository';
import type { TeamInput } from './teams.service';

/** A team as the API and the admin CLI show it (`limit` a USD number). */
export const toTeamObject = (t: TeamWithKeys): TeamObject => ({
  id: t.id,
  name: t.name,
  key_count: t.key_count,
  limit: t.limit === null ? null : toNumber(toUnits(t.limit)),
  limit_reset: t.limit_reset,
  rate_limit_tpm: t.rate_limit_tpm,
  created_at: t.created_at.toISOString(),
  updated_at: t.updated_at.toISOString(),
});

/** The body's budget fields as the service takes them (undefined = unchanged). */
export const teamInput = (body: {
  limit?: string | null;
  limit_reset?: LimitReset | null;
  rate_limit_tpm?: number | null;
}): TeamInput => ({ limit: body.limit, limitReset: body.limit_reset, rateLimitTpm: body.rate_limit_tpm });

/** `:id` of a `/teams/{id}` route: a uuid (400 naming `id` otherwise), lower-cased. */
export function parseTeamId(value: unknown): string {
  if (!isUuid(value)) throw badRequest('id: must be a uuid', { field: 'id' });
  return value.toLowerCase();
}
