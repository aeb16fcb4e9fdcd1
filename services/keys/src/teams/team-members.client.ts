import { createServiceSigner, serviceTokenSource } from '@tollgate/auth';
import {
  type AddTeamMemberRequest,
  addTeamMember,
  listTeamMembers,
  removeTeamMember,
  type TeamMember,
} from '@tollgate/contracts';
import { AppError } from '@tollgate/errors';
import { ACTOR_KEY_HEADER, CLIENT_ADDRESS_HEADER, createServiceClient } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import type { AuditActor } from '../audit/audit';

/**
 * A team's members (dashboard users) for the management API's `/teams/{id}/members`: the dashboard
 * owns its users and who belongs to which team, so they are read and changed through its internal
 * routes (contracts `listTeamMembers`, `addTeamMember`, `removeTeamMember`) with the keys service's
 * token and the acting management key, which the dashboard audits. The dashboard's 4xx (an unknown
 * user, not a member) reaches the caller as it wrote it; anything else is a 503 naming the dashboard.
 */
export interface TeamMembers {
  list(accountId: string, teamId: string): Promise<TeamMember[]>;
  add(
    accountId: string,
    teamId: string,
    user: AddTeamMemberRequest,
    actor: AuditActor,
  ): Promise<{ data: TeamMember; added: boolean }>;
  remove(accountId: string, teamId: string, userId: string, actor: AuditActor): Promise<void>;
  close(): Promise<void>;
}

const actorHeaders = (actor: AuditActor): Record<string, string> => ({
  ...(actor.id ? { [ACTOR_KEY_HEADER]: actor.id } : {}),
  ...(actor.address ? { [CLIENT_ADDRESS_HEADER]: actor.address } : {}),
});

/** DASHBOARD_URL unset: the dashboard (and so every team member) is not part of this deployment. */
const noDashboard = (): never => {
  throw new AppError(
    'service_unavailable',
    'Team members are dashboard users, and this deployment has no dashboard (DASHBOARD_URL is not set)',
    { service: 'dashboard' },
  );
};

export function createTeamMembers(options: {
  dashboardUrl: string | undefined;
  /** The keys service's identity (SERVICE_PRIVATE_KEY). */
  privateKey: string;
  timeoutMs?: number;
  logger?: Logger;
}): TeamMembers {
  if (!options.dashboardUrl) {
    return { list: noDashboard, add: noDashboard, remove: noDashboard, close: async () => {} };
  }
  const client = createServiceClient({
    service: 'dashboard',
    url: options.dashboardUrl,
    token: serviceTokenSource(createServiceSigner('keys', options.privateKey), 'dashboard'),
    timeoutMs: options.timeoutMs ?? 5000,
    logger: options.logger,
  });
  return {
    async list(accountId, teamId) {
      const answer = await client.call({
        method: listTeamMembers.method,
        path: listTeamMembers.path(accountId, teamId),
        response: listTeamMembers.response,
      });
      return answer.data;
    },
    add: (accountId, teamId, user, actor) =>
      client.call({
        method: addTeamMember.method,
        path: addTeamMember.path(accountId, teamId),
        body: user,
        headers: actorHeaders(actor),
        response: addTeamMember.response,
      }),
    async remove(accountId, teamId, userId, actor) {
      await client.call({
        method: removeTeamMember.method,
        path: removeTeamMember.path(accountId, teamId, userId),
        headers: actorHeaders(actor),
        response: removeTeamMember.response,
      });
    },
    close: () => client.close(),
  };
}
