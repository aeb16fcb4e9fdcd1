import { z } from 'zod';
import { accountPath } from './common';
import { uuid } from './ids';

/**
 * Team members (issue 29): the dashboard users who belong to a team. The keys service owns the
 * teams, the dashboard owns its users and who belongs to which team (`dashboard.team_members`), so
 * the management API's `/teams/{id}/members` (keys service, through the proxy) reads and changes
 * them through the dashboard's internal routes below (caller: keys, after checking the team is the
 * account's; the acting management key in `x-tollgate-actor-key`). A change is audited in the
 * dashboard's log as `user.teams`, as the same change made by an owner or the admin CLI is.
 */

export const teamMemberSchema = z.object({
  /** The dashboard user's id. */
  id: z.string(),
  email: z.string(),
  display_name: z.string(),
  role: z.enum(['owner', 'viewer', 'member']),
  /** When the user joined the team. */
  added_at: z.string(),
});
export type TeamMember = z.output<typeof teamMemberSchema>;

/** `POST /teams/{id}/members`: the user, named by id or by email (exactly one). */
export const addTeamMemberBody = z
  .strictObject({
    user_id: uuid('a user id').optional(),
    email: z
      .string({ error: 'expected a string' })
      .trim()
      .min(1, { error: 'must not be empty' })
      .max(320, { error: 'must be at most 320 characters' })
      .optional(),
  })
  .refine((b) => (b.user_id === undefined) !== (b.email === undefined), {
    error: 'name the user by exactly one of user_id and email',
    path: ['user_id'],
  });
export type AddTeamMemberRequest = z.input<typeof addTeamMemberBody>;

const membersPath = (accountId: string, teamId: string) =>
  `${accountPath(accountId)}/teams/${encodeURIComponent(teamId)}/members`;

/** `:accountId/:teamId` of the dashboard's internal member routes. */
export const teamMembersParams = z.object({
  accountId: uuid('an account id'),
  teamId: uuid('a team id'),
});

/** `:accountId/:teamId/:userId` of the dashboard's internal route removing one member. */
export const teamMemberParams = teamMembersParams.extend({ userId: uuid('a user id') });

/** `GET /internal/accounts/:accountId/teams/:teamId/members` (dashboard; caller keys): oldest member first. */
export const listTeamMembers = {
  method: 'GET',
  path: membersPath,
  response: z.object({ data: z.array(teamMemberSchema) }),
} as const;

/**
 * `POST /internal/accounts/:accountId/teams/:teamId/members` (dashboard; caller keys): makes the user
 * a member; `added` false when they already were (nothing changes, nothing is audited). 404 for a
 * user not of the account.
 */
export const addTeamMember = {
  method: 'POST',
  path: membersPath,
  request: addTeamMemberBody,
  response: z.object({ data: teamMemberSchema, added: z.boolean() }),
} as const;

/** `DELETE /internal/accounts/:accountId/teams/:teamId/members/:userId` (dashboard; caller keys): 404 unless a member. */
export const removeTeamMember = {
  method: 'DELETE',
  path: (accountId: string, teamId: string, userId: string) =>
    `${membersPath(accountId, teamId)}/${encodeURIComponent(userId)}`,
  response: z.object({ data: z.object({ id: z.string(), deleted: z.literal(true) }) }),
} as const;
