import type { KeyObject } from '@tollgate/contracts';
import { AppError } from '@tollgate/errors';
import type { RequestHandler, Response } from 'express';
import type { SessionUser } from '../auth/auth.service';
import type { DashboardDb } from '../database';
import type { InternalClient } from '../upstream/internal-client';
import { teamsOf } from './team-members.repository';

/**
 * Team viewers (role `member`) see only their teams' keys and the usage of those keys. Enforced
 * here, server-side, before any route: an allow-list of what a member may ask for; the analytics
 * routes need a `key_id` of one of their teams' keys (a key of another team, or none: 403), except
 * the usage grouped by team (`/api/usage?group_by=team`), whose rows are cut to their teams
 * (`teamRowsOnly`). Owners and viewers pass untouched.
 */
const OPEN = new Set(['/api/me', '/api/session', '/api/sso', '/api/models', '/api/teams', '/api/keys']);
const BY_KEY = new Set(['/api/usage', '/api/latency', '/api/generations']);

const outOfScope = (message: string) => new AppError('forbidden', message, { reason: 'team_scope' });

/** The member's teams (set by teamScope), or null for owners and viewers (the whole account). */
export const scopeOf = (res: Response): string[] | null => (res.locals.teams as string[] | undefined) ?? null;

/** The keys a user may see: all for owners and viewers, their teams' for members. */
export const visibleKeys = (res: Response, keys: KeyObject[]): KeyObject[] => {
  const teams = scopeOf(res);
  return teams === null ? keys : keys.filter((k) => k.team_id !== null && teams.includes(k.team_id));
};

export function teamScope(deps: { db: DashboardDb; client: InternalClient }): RequestHandler {
  return async (req, res, next) => {
    const user = res.locals.user as SessionUser | undefined;
    if (user?.role !== 'member') return next();
    const teams = await teamsOf(deps.db, user.id);
    res.locals.teams = teams;
    if (req.method === 'DELETE' && req.path === '/api/session') return next();
    if (req.method !== 'GET') return next(); // every change needs an owner (requireOwner refuses)
    if (OPEN.has(req.path)) return next();
    if (!BY_KEY.has(req.path)) throw outOfScope("Team viewers see only their teams' keys and usage");
    // Their teams' totals: the route answers only the rows of their teams (teamRowsOnly).
    if (req.path === '/api/usage' && req.query.group_by === 'team' && req.query.key_id === undefined)
      return next();
    const keyId = typeof req.query.key_id === 'string' ? req.query.key_id.toLowerCase() : '';
    if (!keyId) throw outOfScope("Team viewers must choose one of their teams' keys (key_id)");
    const keys = visibleKeys(res, await deps.client.listKeys(user.accountId, true));
    if (!keys.some((k) => k.hash === keyId)) throw outOfScope("This key is not one of your teams' keys");
    next();
  };
}

/** Usage rows grouped by team, as a member may see them: their teams' rows only (owners, viewers: all). */
export function teamRowsOnly<R extends { group: string | null }>(
  res: Response,
  groupBy: string,
  rows: R[],
): R[] {
  const teams = scopeOf(res);
  if (teams === null || groupBy !== 'team') return rows;
  return rows.filter((r) => r.group !== null && teams.includes(r.group));
}
