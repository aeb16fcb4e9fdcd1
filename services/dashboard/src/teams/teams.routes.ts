import type { ServiceVerifier } from '@tollgate/auth';
import { type DashboardAnswerInput, setUserTeams, uuid } from '@tollgate/contracts';
import { badRequest, notFound } from '@tollgate/errors';
import { type ClientAddress, parseId, parseInput, serviceCaller } from '@tollgate/http';
import { maxUnits, toNumber, toUnits } from '@tollgate/money';
import { Router } from 'express';
import { sql } from 'kysely';
import { z } from 'zod';
import { actingOf } from '../api/acting';
import type { DashboardDb } from '../database';
import { requireOwner, requireUser, userOf } from '../http/session';
import type { InternalClient } from '../upstream/internal-client';
import { lockUser } from '../users/users.repository';
import { recordUserChange, type UserActor } from '../users/users-audit';
import { membershipsOf, replaceTeams, sameTeams, teamsOf } from './team-members.repository';
import { scopeOf } from './team-scope';

const teamsBody = z.strictObject({
  team_ids: z
    .array(uuid('a team id'))
    .max(100)
    .transform((ids) => [...new Set(ids.map((id) => id.toLowerCase()))].sort()),
});

/**
 * Teams as the dashboard shows them: `GET /api/teams` (the account's teams from the keys service, each
 * with its budget, its committed spend in the current period from billing and its members; a team
 * viewer gets only their own teams) and `PUT /api/users/:id/teams` (owners:
 * a user's memberships, audited as `user.teams`); `PUT /internal/team-members` is the same change
 * for the admin CLI (`tollgate users set-teams`), audited as the CLI's.
 */
export function teamsRoutes(deps: {
  db: DashboardDb;
  client: InternalClient;
  clientAddress: ClientAddress;
  verifier: ServiceVerifier;
}): Router {
  const router = Router();

  /** Makes the memberships of the user `find` locks exactly `team_ids`; audited when they change. */
  async function setTeams(
    accountId: string,
    find: (trx: DashboardDb) => Promise<{ id: string; email: string } | undefined>,
    team_ids: string[],
    actor: UserActor | null,
    missing: string,
  ) {
    const known = new Set((await deps.client.teams(accountId)).map((t) => t.id));
    return deps.db.transaction().execute(async (trx) => {
      const user = await find(trx);
      if (!user) throw notFound(missing);
      const before = await teamsOf(trx, user.id);
      // A team deleted since (the keys service's) may still be among the user's memberships, and so in
      // a list sent back whole (the Teams page sends the user's teams plus or minus one): it is left out.
      const unknown = team_ids.find((id) => !known.has(id) && !before.includes(id));
      if (unknown) throw badRequest(`team_ids: no team ${unknown} in this account`, { field: 'team_ids' });
      const after = team_ids.filter((id) => known.has(id));
      if (sameTeams(before, after)) return { ...user, team_ids: after };
      await replaceTeams(trx, accountId, user.id, after);
      await recordUserChange(trx, actor, {
        accountId,
        action: 'user.teams',
        userId: user.id,
        before: { email: user.email, teams: before },
        after: { email: user.email, teams: after },
      });
      return { ...user, team_ids: after };
    });
  }

  router.get('/api/teams', requireUser, async (_req, res) => {
    const accountId = userOf(res).accountId;
    const [teams, members] = await Promise.all([
      deps.client.teams(accountId),
      membershipsOf(deps.db, accountId),
    ]);
    const mine = scopeOf(res);
    const visible = teams.filter((t) => mine === null || mine.includes(t.id));
    const spend = visible.length
      ? await deps.client.teamsUsage(visible.map((t) => ({ id: t.id, limit_reset: t.limit_reset })))
      : {};
    const byTeam = new Map<string, string[]>();
    for (const [user, ids] of members) for (const t of ids) byTeam.set(t, [...(byTeam.get(t) ?? []), user]);
    const answer: DashboardAnswerInput<'teams'> = {
      data: visible.map((t) => {
        const usage = toUnits(spend[t.id]?.usage ?? '0');
        return {
          id: t.id,
          name: t.name,
          key_count: t.key_count,
          limit: t.limit,
          limit_reset: t.limit_reset,
          rate_limit_tpm: t.rate_limit_tpm,
          usage: toNumber(usage),
          limit_remaining: t.limit === null ? null : toNumber(maxUnits(0n, toUnits(t.limit) - usage)),
          member_ids: byTeam.get(t.id) ?? [],
        };
      }),
    };
    res.json(answer);
  });

  // An owner's team changes: the keys service validates (its 400 names the field) and audits them.
  const acting = actingOf(deps.clientAddress);
  const objectBody = (body: unknown) => {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw badRequest('Request body must be a JSON object (Content-Type: application/json)');
    }
    return body;
  };
  const teamId = (value: unknown) => parseId(value, 'id', 'a team id');
  router.post('/api/teams', requireUser, requireOwner, async (req, res) => {
    const data = await deps.client.createTeam(userOf(res).accountId, objectBody(req.body), acting(req, res));
    res.status(201).json({ data });
  });
  router.patch('/api/teams/:id', requireUser, requireOwner, async (req, res) => {
    const id = teamId(req.params.id);
    const body = objectBody(req.body);
    res.json({ data: await deps.client.updateTeam(userOf(res).accountId, id, body, acting(req, res)) });
  });
  router.delete('/api/teams/:id', requireUser, requireOwner, async (req, res) => {
    const id = teamId(req.params.id);
    res.json({ data: await deps.client.deleteTeam(userOf(res).accountId, id, acting(req, res)) });
  });

  router.put('/api/users/:id/teams', requireUser, requireOwner, async (req, res) => {
    const { team_ids } = parseInput(teamsBody, req.body);
    const userId = parseId(req.params.id, 'id', 'a user id');
    const me = userOf(res);
    const user = await setTeams(
      me.accountId,
      (trx) => lockUser(trx, me.accountId, userId),
      team_ids,
      { userId: me.id, address: deps.clientAddress(req) },
      `No user ${userId} in this account`,
    );
    res.json({ data: { id: userId, team_ids: user.team_ids } });
  });

  router.put(setUserTeams.path, serviceCaller(deps.verifier, ['admin']), async (req, res) => {
    const body = parseInput(setUserTeams.request, req.body);
    const accountId = body.account_id.toLowerCase();
    const team_ids = [...new Set(body.team_ids.map((id) => id.toLowerCase()))].sort();
    const user = await setTeams(
      accountId,
      (trx) =>
        trx
          .selectFrom('dashboard.users')
          .select(['id', 'email'])
          .where('account_id', '=', accountId)
          .where(sql<boolean>`lower(email) = lower(${body.email})`)
          .forUpdate()
          .executeTakeFirst(),
      team_ids,
      null,
      `No user ${body.email} in this account`,
    );
    const answer: z.input<typeof setUserTeams.response> = {
      data: { id: user.id, email: user.email, team_ids: user.team_ids },
    };
    res.json(answer);
  });

  return router;
}
