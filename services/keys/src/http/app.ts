import type { ServiceVerifier } from '@tollgate/auth';
import { createServiceApp, type ReadinessCheck } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import type express from 'express';
import type { Registry } from 'prom-client';
import { accountsRoutes } from '../accounts/accounts.routes';
import type { AccountService } from '../accounts/accounts.service';
import { auditRoutes } from '../audit/audit.routes';
import type { RemoteAuditLogs } from '../audit/audit-sources';
import type { KeysDb } from '../database';
import { accountKeysRoutes } from '../internal/account-keys.routes';
import type { KeyPresenter } from '../keys/key-view';
import { keysRoutes } from '../keys/keys.routes';
import type { KeyService } from '../keys/keys.service';
import { ownersRoutes } from '../resolve/owners.routes';
import { resolveRoutes } from '../resolve/resolve.routes';
import type { TeamMembers } from '../teams/team-members.client';
import { teamMembersRoutes } from '../teams/team-members.routes';
import { teamsInternalRoutes } from '../teams/teams.internal.routes';
import { teamsRoutes } from '../teams/teams.routes';
import type { TeamService } from '../teams/teams.service';

export interface KeysAppDeps {
  keys: KeyService;
  teams: TeamService;
  accounts: AccountService;
  /** The audit log is read straight from the service's own schema. */
  db: KeysDb;
  /** Billing's and the dashboard's audit logs, merged into `GET /audit`. */
  remoteAudit: RemoteAuditLogs;
  /** A team's members (dashboard users), kept by the dashboard: `/teams/{id}/members`. */
  members: TeamMembers;
  presenter: KeyPresenter;
  /** Checks the service tokens of internal and caller routes (this service's trusted callers). */
  verifier: ServiceVerifier;
  logger: Logger;
  readiness: Record<string, ReadinessCheck>;
  /** Request metrics are counted into this registry (served on the metrics port by main.ts). */
  metrics?: Registry;
}

/** The keys service's express app: health, the proxy's resolve endpoint, the management API. */
export function createKeysApp(deps: KeysAppDeps): express.Express {
  return createServiceApp({
    service: 'keys',
    logger: deps.logger,
    readiness: deps.readiness,
    metrics: deps.metrics,
    jsonLimit: '64kb',
    routes(app) {
      app.use(resolveRoutes(deps));
      app.use(ownersRoutes(deps));
      app.use(keysRoutes(deps));
      app.use(teamsRoutes(deps));
      app.use(teamMembersRoutes(deps));
      app.use(accountsRoutes(deps));
      app.use(teamsInternalRoutes(deps));
      app.use(accountKeysRoutes(deps));
      app.use(auditRoutes(deps));
    },
  });
}
