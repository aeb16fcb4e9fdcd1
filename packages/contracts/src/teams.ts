import { z } from 'zod';
import { displayName, limitReset } from './common';
import { usdLimitInput as limit, limitResetInput, rateLimitTpmInput as rateLimitTpm } from './keys';

/**
 * Teams (issue 29): the public management API `/teams` (forwarded by the proxy to the keys service).
 * A team groups keys of one account; a key belongs to at most one team (`team_id` of the key). A
 * team may carry a USD spend limit with its reset period (like a key's, spec §8.1) and a
 * tokens-per-minute limit: admission reserves against key, team and account in one atomic step.
 */

/** What a team's create and update bodies both may set (each optional; null clears it). */
const teamSettings = {
  limit: limit.nullable().optional(),
  limit_reset: limitResetInput.nullable().optional(),
  rate_limit_tpm: rateLimitTpm.nullable().optional(),
};

export const createTeamBody = z.strictObject({ name: displayName, ...teamSettings });
export const updateTeamBody = z.strictObject({ name: displayName.optional(), ...teamSettings });

export const teamObjectSchema = z.object({
  id: z.string(),
  name: z.string(),
  /** Keys of the team that are not revoked. */
  key_count: z.number().int(),
  /** USD spend limit of the current period, null = none. */
  limit: z.number().nullable(),
  /** daily, weekly, monthly, or null (never resets). */
  limit_reset: limitReset.nullable(),
  /** Tokens per minute across the team's keys, null = none. */
  rate_limit_tpm: z.number().int().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type TeamObject = z.output<typeof teamObjectSchema>;

/** `GET /internal/accounts/:accountId/teams` (dashboard): every team of the account, oldest first. */
export const listAccountTeams = {
  method: 'GET',
  path: (accountId: string) => `/internal/accounts/${encodeURIComponent(accountId)}/teams`,
  response: z.object({ data: z.array(teamObjectSchema) }),
} as const;

const teamPath = (accountId: string, id: string) =>
  `${listAccountTeams.path(accountId)}/${encodeURIComponent(id)}`;

/** `POST /internal/accounts/:accountId/teams` (dashboard, owners): a team, audited for the acting user. */
export const createAccountTeam = {
  method: 'POST',
  path: listAccountTeams.path,
  request: createTeamBody,
  response: z.object({ data: teamObjectSchema }),
} as const;

/** `PATCH /internal/accounts/:accountId/teams/:id` (dashboard, owners): its name and budget. */
export const updateAccountTeam = {
  method: 'PATCH',
  path: teamPath,
  request: updateTeamBody,
  response: z.object({ data: teamObjectSchema }),
} as const;

/** `DELETE /internal/accounts/:accountId/teams/:id` (dashboard, owners): 409 while live keys belong to it. */
export const deleteAccountTeam = {
  method: 'DELETE',
  path: teamPath,
  response: z.object({ data: z.object({ id: z.string(), deleted: z.literal(true) }) }),
} as const;
