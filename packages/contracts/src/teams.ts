import { z } from 'zod';

/**
 * Teams (issue 29): the public management API `/teams` (forwarded by the proxy to the keys service).
 * A team groups keys of one account; a key belongs to at most one team (`team_id` of the key).
 */

const name = z
  .string({ error: 'expected a string' })
  .trim()
  .min(1, { error: 'must not be empty' })
  .max(200, { error: 'must be at most 200 characters' })
  .refine((s) => !s.includes('\u0000'), { error: 'must not contain NUL characters' });

export const createTeamBody = z.strictObject({ name });
export const updateTeamBody = z.strictObject({ name: name.optional() });

export const teamObjectSchema = z.object({
  id: z.string(),
  name: z.string(),
  /** Keys of the team that are not revoked. */
  key_count: z.number().int(),
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
