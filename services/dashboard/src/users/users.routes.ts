import { parseInput, serviceCaller } from '@tollgate/http';
import { Router } from 'express';
import { z } from 'zod';
import { listUsers } from '../auth/auth.repository';
import type { AuthService } from '../auth/auth.service';
import type { DashboardDb, Role } from '../database';
import { requireOwner, requireUser, userOf } from '../http/session';
import type { InternalClient } from '../upstream/internal-client';

const inviteBody = z.strictObject({
  email: z.string({ error: 'expected a string' }).max(320),
  display_name: z.string({ error: 'expected a string' }).max(200),
  role: z.enum(['owner', 'viewer'], { error: 'expected owner or viewer' }),
});

const internalInviteBody = inviteBody.extend({
  account_id: z.string().uuid('expected an account id (uuid)'),
});

/** The sign-in link of an invitation: the token travels in the URL fragment (never sent to a server log). */
export const inviteLink = (publicUrl: string, token: string) =>
  `${publicUrl.replace(/\/$/, '')}/#/accept?token=${encodeURIComponent(token)}`;

export function usersRoutes(deps: {
  db: DashboardDb;
  auth: AuthService;
  client: InternalClient;
  publicUrl: string;
  secret: string;
}): Router {
  const router = Router();

  router.get('/api/users', requireUser, async (_req, res) => {
    const users = await listUsers(deps.db, userOf(res).accountId);
    res.json({
      data: users.map((u) => ({
        id: u.id,
        email: u.email,
        display_name: u.display_name,
        role: u.role,
        invited: u.password_hash === null,
        created_at: u.created_at.toISOString(),
      })),
    });
  });

  /** An owner invites a user into their own account: answers the one-time sign-in link. */
  router.post('/api/users', requireUser, requireOwner, async (req, res) => {
    const body = parseInput(inviteBody, req.body);
    const invite = await deps.auth.invite({
      accountId: userOf(res).accountId,
      email: body.email,
      displayName: body.display_name,
      role: body.role as Role,
    });
    res.status(201).json({
      data: {
        id: invite.userId,
        email: body.email.trim(),
        role: body.role,
        sign_in_link: inviteLink(deps.publicUrl, invite.token),
        expires_at: invite.expiresAt.toISOString(),
      },
    });
  });

  /** The admin CLI (`tollgate users create`): the first owner of an account (service token). */
  router.post('/internal/users', serviceCaller(deps.secret), async (req, res) => {
    const body = parseInput(internalInviteBody, req.body);
    await deps.client.account(body.account_id); // 404 unless the account exists
    const invite = await deps.auth.invite({
      accountId: body.account_id,
      email: body.email,
      displayName: body.display_name,
      role: body.role as Role,
    });
    res.status(201).json({
      data: {
        id: invite.userId,
        account_id: body.account_id,
        email: body.email.trim(),
        role: body.role,
        sign_in_link: inviteLink(deps.publicUrl, invite.token),
        expires_at: invite.expiresAt.toISOString(),
      },
    });
  });

  return router;
}
