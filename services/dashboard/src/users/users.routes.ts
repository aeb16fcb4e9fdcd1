import type { ServiceVerifier } from '@tollgate/auth';
import { createUser, type DashboardAnswerInput, type invitedUserSchema } from '@tollgate/contracts';
import { type ClientAddress, parseId, parseInput, serviceCaller } from '@tollgate/http';
import { type Request, type Response, Router } from 'express';
import { z } from 'zod';
import { listUsers } from '../auth/auth.repository';
import type { AuthService } from '../auth/auth.service';
import type { DashboardDb, Role } from '../database';
import { requireOwner, requireUser, userOf } from '../http/session';
import { membershipsOf } from '../teams/team-members.repository';
import type { InternalClient } from '../upstream/internal-client';
import type { UsersService } from './users.service';
import type { UserActor } from './users-audit';

/** An owner's invitation into their own account: the CLI's body without the account. */
const inviteBody = createUser.request.omit({ account_id: true });
const roleBody = z.strictObject({
  role: z.enum(['owner', 'viewer', 'member'], { error: 'expected owner, viewer or member' }),
});

const userIdOf = (value: unknown) => parseId(value, 'id', 'a user id');

/** The sign-in link of an invitation: the token travels in the URL fragment (never sent to a server log). */
const inviteLink = (publicUrl: string, token: string) =>
  `${publicUrl.replace(/\/$/, '')}/#/accept?token=${encodeURIComponent(token)}`;

export function usersRoutes(deps: {
  db: DashboardDb;
  auth: AuthService;
  client: InternalClient;
  users: UsersService;
  publicUrl: string;
  verifier: ServiceVerifier;
  /** The client's address (TRUSTED_PROXIES), for the audit log. */
  clientAddress: ClientAddress;
}): Router {
  const router = Router();
  const actor = (req: Request, res: Response) => ({
    userId: userOf(res).id,
    address: deps.clientAddress(req),
  });

  router.get('/api/users', requireUser, async (_req, res) => {
    const users = await listUsers(deps.db, userOf(res).accountId);
    const teams = await membershipsOf(deps.db, userOf(res).accountId);
    const answer: DashboardAnswerInput<'users'> = {
      data: users.map((u) => ({
        id: u.id,
        email: u.email,
        display_name: u.display_name,
        role: u.role,
        invited: u.password_hash === null && u.sso_subject === null,
        sso: u.sso_subject !== null,
        team_ids: teams.get(u.id) ?? [],
        created_at: u.created_at.toISOString(),
      })),
    };
    res.json(answer);
  });

  /** Creates the user and its invitation; the answer carries the one-time sign-in link. */
  const invite = async (
    accountId: string,
    body: z.output<typeof inviteBody>,
    actor: UserActor | null,
  ): Promise<z.input<typeof invitedUserSchema>> => {
    const created = await deps.auth.invite({
      actor,
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
    res.status(201).json({ data: await invite(userOf(res).accountId, body, actor(req, res)) });
  });

  /** Owners change a user's role (never leaving the account without an owner). */
  router.patch('/api/users/:id', requireUser, requireOwner, async (req, res) => {
    const { role } = parseInput(roleBody, req.body);
    await deps.users.setRole(userOf(res).accountId, userIdOf(req.params.id), role, actor(req, res));
    res.status(204).end();
  });

  /** Removes a user, or cancels an invitation; their sessions end with them. */
  router.delete('/api/users/:id', requireUser, requireOwner, async (req, res) => {
    await deps.users.remove(userOf(res).accountId, userIdOf(req.params.id), actor(req, res));
    res.status(204).end();
  });

  /** Ends every session of a user (signed in elsewhere, a lost laptop). */
  router.delete('/api/users/:id/sessions', requireUser, requireOwner, async (req, res) => {
    const ended = await deps.users.endSessions(
      userOf(res).accountId,
      userIdOf(req.params.id),
      actor(req, res),
    );
    res.json({ data: { ended } });
  });

  /**
   * A new one-time sign-in link: a re-sent invitation for an invited user, a password reset for an
   * active one (the password stops working and their sessions end). Older links stop working.
   */
  router.post('/api/users/:id/sign-in-link', requireUser, requireOwner, async (req, res) => {
    const link = await deps.users.newSignInLink(
      userOf(res).accountId,
      userIdOf(req.params.id),
      actor(req, res),
    );
    const answer: DashboardAnswerInput<'signInLink'> = {
      data: {
        kind: link.kind,
        sign_in_link: inviteLink(deps.publicUrl, link.token),
        expires_at: link.expiresAt.toISOString(),
      },
    };
    res.status(201).json(answer);
  });

  /** The admin CLI (`tollgate users create`): the first owner of an account (service token). */
  router.post('/internal/users', serviceCaller(deps.verifier, ['admin']), async (req, res) => {
    const body = parseInput(createUser.request, req.body);
    await deps.client.account(body.account_id); // 404 unless the account exists
    const answer: z.input<typeof createUser.response> = { data: await invite(body.account_id, body, null) };
    res.status(201).json(answer);
  });

  return router;
}
