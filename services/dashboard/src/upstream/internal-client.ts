import { type ServiceSigner, serviceTokenSource } from '@tollgate/auth';
import {
  type AccountCreditsQuery,
  type AccountErrorsQuery,
  type AccountLatencyQuery,
  type AccountUsageQuery,
  accountAudit,
  accountCredits,
  accountErrors,
  accountLatency,
  accountUsage,
  type CreateAccountKeyRequest,
  createAccountKey,
  createAccountTeam,
  deleteAccountTeam,
  getAccount,
  getAccountGeneration,
  getAccountRefusal,
  type KeyObject,
  type ListAccountGenerationsQuery,
  type ListAccountRefusalsQuery,
  type ListAccountSessionsQuery,
  listAccountGenerations,
  listAccountKeys,
  listAccountRefusals,
  listAccountSessions,
  listAccountTeams,
  queryString,
  revokeAccountKey,
  teamsUsage,
  type UpdateAccountKeyRequest,
  type UpdateAccountRequest,
  updateAccount,
  updateAccountKey,
  updateAccountTeam,
} from '@tollgate/contracts';
import { ACTOR_USER_HEADER, CLIENT_ADDRESS_HEADER, createServiceClient } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import type { z } from 'zod';

/**
 * The dashboard's only way to keys and billing: their internal HTTP APIs through the shared service
 * client of `@tollgate/http` (undici keep-alive pool, a cached token signed with the dashboard's key
 * per callee, a deadline per call, the request id passed on). Every internal call the dashboard makes is
 * a method here, and each sends and parses with its contract from `@tollgate/contracts`.
 *
 * Errors: the owner's 4xx becomes the same AppError (its message names the field, safe to show);
 * anything else (5xx, timeout, connection refused, an answer that does not match the contract)
 * becomes 503 naming only the service.
 */
export interface InternalClientOptions {
  keysUrl: string;
  billingUrl: string;
  /** The dashboard's identity. */
  signer: ServiceSigner;
  timeoutMs: number;
  logger?: Logger;
}

type Data<C extends { response: z.ZodType }> = z.output<C['response']> extends { data: infer D } ? D : never;

/** Who a key change acts for: the signed-in user and the client's address (the keys service's audit log). */
export interface Acting {
  userId: string;
  address: string;
}

export const actingHeaders = (a: Acting): Record<string, string> => ({
  [ACTOR_USER_HEADER]: a.userId,
  [CLIENT_ADDRESS_HEADER]: a.address,
});

export interface InternalClient {
  account(accountId: string): Promise<Data<typeof getAccount>>;
  /** Changes the account's settings (`store_bodies`), audited by the keys service for `acting`. */
  updateAccount(
    accountId: string,
    body: UpdateAccountRequest,
    acting: Acting,
  ): Promise<Data<typeof updateAccount>>;
  /** Every team of the account (keys service). */
  teams(accountId: string): Promise<Data<typeof listAccountTeams>>;
  /** The teams' committed spend in their limit periods (billing). */
  teamsUsage(teams: z.input<typeof teamsUsage.request>['teams']): Promise<Data<typeof teamsUsage>>;
  /** An owner's team changes (keys service; audited there for `acting`). */
  createTeam(accountId: string, body: unknown, acting: Acting): Promise<Data<typeof createAccountTeam>>;
  updateTeam(
    accountId: string,
    id: string,
    body: unknown,
    acting: Acting,
  ): Promise<Data<typeof updateAccountTeam>>;
  deleteTeam(accountId: string, id: string, acting: Acting): Promise<Data<typeof deleteAccountTeam>>;
  /** Every key of the account (all pages). */
  listKeys(accountId: string, includeRevoked: boolean): Promise<KeyObject[]>;
  createKey(
    accountId: string,
    body: CreateAccountKeyRequest,
    acting: Acting,
  ): Promise<Data<typeof createAccountKey>>;
  updateKey(
    accountId: string,
    hash: string,
    body: UpdateAccountKeyRequest,
    acting: Acting,
  ): Promise<KeyObject>;
  revokeKey(accountId: string, hash: string, acting: Acting): Promise<Data<typeof revokeAccountKey>>;
  /** One page of billing's audit entries (credits, postpaid), newest first (`before`, `limit`). */
  billingAudit(
    accountId: string,
    query: Record<string, string>,
  ): Promise<z.output<typeof accountAudit.response>>;
  /** One page of the account's audit log (keys service), newest first. */
  audit(accountId: string, query: Record<string, string>): Promise<z.output<typeof accountAudit.response>>;
  usage(accountId: string, query: AccountUsageQuery): Promise<Data<typeof accountUsage>>;
  latency(accountId: string, query: AccountLatencyQuery): Promise<Data<typeof accountLatency>>;
  generations(
    accountId: string,
    query: ListAccountGenerationsQuery,
  ): Promise<z.output<typeof listAccountGenerations.response>>;
  sessions(
    accountId: string,
    query: ListAccountSessionsQuery,
  ): Promise<z.output<typeof listAccountSessions.response>>;
  generation(accountId: string, id: string): Promise<Data<typeof getAccountGeneration>>;
  /** Answered requests, upstream errors and refusals per bucket (billing's roll-ups). */
  errors(accountId: string, query: AccountErrorsQuery): Promise<Data<typeof accountErrors>>;
  /** The last refusals of the account or one key (billing keeps 50 per key). */
  refusals(accountId: string, query: ListAccountRefusalsQuery): Promise<Data<typeof listAccountRefusals>>;
  /** One refusal by the request id it answered with. */
  refusal(accountId: string, id: string): Promise<Data<typeof getAccountRefusal>>;
  credits(accountId: string, query: AccountCreditsQuery): Promise<Data<typeof accountCredits>>;
}

/**
 * Largest answer read from keys or billing (4 MiB): every list the dashboard asks for is paged or
 * bounded (200 records, top-N analytics groups), so a bigger answer is a fault, answered 503.
 */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/** The `data` of an owner's `{data: …}` answer (every contract here answers in that envelope). */
const dataOf = async <T>(answer: Promise<{ data: T }>): Promise<T> => (await answer).data;

/** Errors and refusals (billing's roll-ups and last refusals per key). */
function refusalCalls(
  billing: ReturnType<typeof createServiceClient>,
): Pick<InternalClient, 'errors' | 'refusals' | 'refusal'> {
  return {
    errors: (id, query) =>
      dataOf(
        billing.call({
          method: accountErrors.method,
          path: `${accountErrors.path(id)}${queryString(query)}`,
          response: accountErrors.response,
        }),
      ),
    refusals: (id, query) =>
      dataOf(
        billing.call({
          method: listAccountRefusals.method,
          path: `${listAccountRefusals.path(id)}${queryString(query)}`,
          response: listAccountRefusals.response,
        }),
      ),
    refusal: (id, refusalId) =>
      dataOf(
        billing.call({
          method: getAccountRefusal.method,
          path: getAccountRefusal.path(id, refusalId),
          response: getAccountRefusal.response,
        }),
      ),
  };
}

/** Teams (keys service) and their spend (billing). */
function teamCalls(
  keys: ReturnType<typeof createServiceClient>,
  billing: ReturnType<typeof createServiceClient>,
): Pick<InternalClient, 'teams' | 'teamsUsage' | 'createTeam' | 'updateTeam' | 'deleteTeam'> {
  return {
    createTeam: (id, body, acting) =>
      dataOf(
        keys.call({
          method: createAccountTeam.method,
          path: createAccountTeam.path(id),
          headers: actingHeaders(acting),
          body,
          response: createAccountTeam.response,
        }),
      ),
    updateTeam: (id, team, body, acting) =>
      dataOf(
        keys.call({
          method: updateAccountTeam.method,
          path: updateAccountTeam.path(id, team),
          headers: actingHeaders(acting),
          body,
          response: updateAccountTeam.response,
        }),
      ),
    deleteTeam: (id, team, acting) =>
      dataOf(
        keys.call({
          method: deleteAccountTeam.method,
          path: deleteAccountTeam.path(id, team),
          headers: actingHeaders(acting),
          response: deleteAccountTeam.response,
        }),
      ),
    teams: (id) =>
      dataOf(
        keys.call({
          method: listAccountTeams.method,
          path: listAccountTeams.path(id),
          response: listAccountTeams.response,
        }),
      ),
    teamsUsage: (teams) =>
      dataOf(
        billing.call({
          method: teamsUsage.method,
          path: teamsUsage.path,
          body: { teams },
          response: teamsUsage.response,
        }),
      ),
  };
}

export function createInternalClient(o: InternalClientOptions): InternalClient & { close(): Promise<void> } {
  const keys = createServiceClient({
    service: 'keys',
    url: o.keysUrl,
    token: serviceTokenSource(o.signer, 'keys'),
    timeoutMs: o.timeoutMs,
    logger: o.logger,
    maxResponseBytes: MAX_ANSWER_BYTES,
  });
  const billing = createServiceClient({
    service: 'billing',
    url: o.billingUrl,
    token: serviceTokenSource(o.signer, 'billing'),
    timeoutMs: o.timeoutMs,
    logger: o.logger,
    maxResponseBytes: MAX_ANSWER_BYTES,
  });

  return {
    account: (id) =>
      dataOf(
        keys.call({
          method: getAccount.method,
          path: getAccount.path(id),
          response: getAccount.response,
        }),
      ),
    updateAccount: (id, body, acting) =>
      dataOf(
        keys.call({
          method: updateAccount.method,
          path: updateAccount.path(id),
          headers: actingHeaders(acting),
          body,
          response: updateAccount.response,
        }),
      ),
    ...teamCalls(keys, billing),
    async listKeys(id, includeRevoked) {
      const all: KeyObject[] = [];
      let offset: number | null = 0;
      while (offset !== null) {
        const query: z.input<typeof listAccountKeys.query> = {
          include_revoked: String(includeRevoked) as 'true' | 'false',
          offset: String(offset),
        };
        const page: z.output<typeof listAccountKeys.response> = await keys.call({
          method: listAccountKeys.method,
          path: `${listAccountKeys.path(id)}${queryString(query)}`,
          response: listAccountKeys.response,
        });
        all.push(...page.data);
        offset = page.next_offset;
      }
      return all;
    },
    createKey: (id, body, acting) =>
      dataOf(
        keys.call({
          method: createAccountKey.method,
          path: createAccountKey.path(id),
          headers: actingHeaders(acting),
          body,
          response: createAccountKey.response,
        }),
      ),
    updateKey: (id, hash, body, acting) =>
      dataOf(
        keys.call({
          method: updateAccountKey.method,
          path: updateAccountKey.path(id, hash),
          headers: actingHeaders(acting),
          body,
          response: updateAccountKey.response,
        }),
      ),
    revokeKey: (id, hash, acting) =>
      dataOf(
        keys.call({
          method: revokeAccountKey.method,
          path: revokeAccountKey.path(id, hash),
          headers: actingHeaders(acting),
          response: revokeAccountKey.response,
        }),
      ),
    billingAudit: (id, query) =>
      billing.call({
        method: accountAudit.method,
        path: `${accountAudit.path(id)}${queryString(query)}`,
        response: accountAudit.response,
      }),
    audit: (id, query) =>
      keys.call({
        method: accountAudit.method,
        path: `${accountAudit.path(id)}${queryString(query)}`,
        response: accountAudit.response,
      }),
    usage: (id, query) =>
      dataOf(
        billing.call({
          method: accountUsage.method,
          path: `${accountUsage.path(id)}${queryString(query)}`,
          response: accountUsage.response,
        }),
      ),
    latency: (id, query) =>
      dataOf(
        billing.call({
          method: accountLatency.method,
          path: `${accountLatency.path(id)}${queryString(query)}`,
          response: accountLatency.response,
        }),
      ),
    generations: (id, query) =>
      billing.call({
        method: listAccountGenerations.method,
        path: `${listAccountGenerations.path(id)}${queryString(query)}`,
        response: listAccountGenerations.response,
      }),
    sessions: (id, query) =>
      billing.call({
        method: listAccountSessions.method,
        path: `${listAccountSessions.path(id)}${queryString(query)}`,
        response: listAccountSessions.response,
      }),
    generation: (id, genId) =>
      dataOf(
        billing.call({
          method: getAccountGeneration.method,
          path: getAccountGeneration.path(id, genId),
          response: getAccountGeneration.response,
        }),
      ),
    ...refusalCalls(billing),
    credits: (id, query) =>
      dataOf(
        billing.call({
          method: accountCredits.method,
          path: `${accountCredits.path(id)}${queryString(query)}`,
          response: accountCredits.response,
        }),
      ),
    close: async () => {
      await Promise.all([keys.close(), billing.close()]);
    },
  };
}
