import { z } from 'zod';
import { uuid } from './ids';

/**
 * The dashboard's internal API. The dashboard's route parses the request and builds the answer with
 * these schemas; the caller (the admin CLI, `tollgate users create`) parses the answer with them.
 */

/** An invitation: who, and with which role. */
export const inviteUserBody = z.strictObject({
  email: z.string({ error: 'expected a string' }).max(320),
  display_name: z.string({ error: 'expected a string' }).max(200),
  role: z.enum(['owner', 'viewer'], { error: 'expected owner or viewer' }),
});

/** The created user and the one-time sign-in link of its invitation. */
export const invitedUserSchema = z.object({
  id: z.string(),
  account_id: z.string(),
  email: z.string(),
  role: z.enum(['owner', 'viewer']),
  sign_in_link: z.string(),
  expires_at: z.string(),
});

/** `POST /internal/users` (caller: CLI): a user of an existing account (404 unless it exists). */
export const createUser = {
  method: 'POST',
  path: '/internal/users',
  request: inviteUserBody.extend({ account_id: uuid('an account id') }),
  response: z.object({ data: invitedUserSchema }),
} as const;
export type CreateUserRequest = z.input<typeof createUser.request>;

/**
 * `PUT /internal/team-members` (caller: the admin CLI, `tollgate users set-teams`): a user's team
 * memberships (named by email), the same change as the dashboard's `PUT /api/users/{id}/teams`,
 * audited as `user.teams` by the admin CLI. 404 unless the user is the account's; 400 for a team
 * that is not the account's.
 */
export const setUserTeams = {
  method: 'PUT',
  path: '/internal/team-members',
  request: z.strictObject({
    account_id: uuid('an account id'),
    email: z.string({ error: 'expected a string' }).max(320),
    team_ids: z.array(uuid('a team id')).max(100),
  }),
  response: z.object({
    data: z.object({ id: z.string(), email: z.string(), team_ids: z.array(z.string()) }),
  }),
} as const;
export type SetUserTeamsRequest = z.input<typeof setUserTeams.request>;
