import type { ServiceVerifier } from '@tollgate/auth';
import { createUser, type invitedUserSchema } from '@tollgate/contracts';
import { parseInput, serviceCaller } from '@tollgate/http';
import { Router } from 'express';
import type { z } from 'zod';
import { listUsers } from '../auth/auth.repository';
import type { AuthService } from '../auth/auth.service';
import type { DashboardDb, Role } from '../database';
import { requireOwner, requireUser, userOf } from '../http/session';
import type { InternalClient } from '../upstream/internal-client';

/** An owner's invitation into their own account: the CLI's body without the account. */
const inviteBody = createUser.request.omit({ account_id: true });

/** The sign-in link of an invitation: the token travels in the URL fragment (never sent to a server log). */
const inviteLink = (publicUrl: string, token: string) =>
  `${publicUrl.replace(/\/$/, '')}/#/accept?token=${encodeURIComponent(token)}`;

export function usersRoutes(deps: {
  db: DashboardDb;
  auth: AuthService;
  client: InternalClient;
  publicUrl: string;
  verifier: ServiceVerifier;
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

  /** Creates the user and its invitation; the answer carries the one-time sign-in link. */
  const invite = async (
    accountId: string,
    body: z.output<typeof inviteBody>,
  ): Promise<z.input<typeof invitedUserSchema>> => {
    const created = await deps.auth.invite({
      accountId,
      email: body.email,
      displayName: body.display_name,
      role: body.role as Role,
    });
    return {
      id: created.userId,
      account_id: accountId,
      email: body.email.trim(),
      role: body.role,
      sign_in_link: inviteLink(deps.publicUrl, created.token),
      expires_at: created.expiresAt.toISOString(),
    };
  };

  /** An owner invites a user into their own account. */
  router.post('/api/users', requireUser, requireOwner, async (req, res) => {
    const body = parseInput(inviteBody, req.body);
    res.status(201).json({ data: await invite(userOf(res).accountId, body) });
  });

  /** The admin CLI (`tollgate users create`): the first owner of an account (service token). */
  router.post('/internal/users', serviceCaller(deps.verifier, ['admin']), async (req, res) => {
    const body = parseInput(createUser.request, req.body);
    await deps.client.account(body.account_id); // 404 unless the account exists
    const answer: z.input<typeof createUser.response> = { data: await invite(body.account_id, body) };
    res.status(201).json(answer);
  });

  return router;
}
