import { z } from 'zod';
import { uuid } from './common';

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
