import type { KeyObject } from 'node:crypto';
import { type Catalog, type CatalogModel, computeCost, requestWorstCase } from '@tollgate/catalog';
import { type UsageEvent, type UsageEventV1, verifyMessageSignature } from '@tollgate/events';
import { toDecimal, toUnits } from '@tollgate/money';
import type { ConsumeMessage } from 'amqplib';
import type { UsageCheck } from '../config';
import type { KeyOwners } from '../keys/key-owners';

/** Clock difference between the proxy's host and billing's tolerated by the `time` check. */
const CLOCK_SKEW_MS = 2 * 60_000;

export interface UsageChecksOptions {
  checks: ReadonlySet<UsageCheck>;
  /** Billing's catalog (prices only). */
  catalog: Catalog;
  /** Who may sign usage messages: the proxy's public key (from SERVICE_PUBLIC_KEYS). */
  signers: ReadonlyMap<string, KeyObject>;
  owners: KeyOwners;
  /** Latest hand-over to the publisher after `finished_at`, ms. */
  maxSendDelayMs: number;
  now?: () => number;
}

export interface UsageChecks {
  /**
   * The consumer's receipt check (`verifyMessage`): signature, then each event's time and cost.
   * Synchronous: one Ed25519 verification per message (up to 100 events) and integer arithmetic.
   */
  verifyMessage(message: ConsumeMessage, events: readonly UsageEvent[]): string | null;
  /** The `key` check, before recording: event id → reason for events whose key is not the account's. */
  foreignKeys(events: readonly UsageEvent[]): Promise<Map<string, string>>;
}

/**
 * Billing trusts no figure it can recompute (issue 23): the proxy's broker credentials alone cannot
 * bill an account (signature), a signed event cannot claim a cost its tokens do not make with
 * billing's own catalog nor more than any request can cost, its key must belong to its account, and
 * its `finished_at` (which picks the spend period) must lie within minutes of when it was sent.
 */
export function createUsageChecks(options: UsageChecksOptions): UsageChecks {
  const { checks, catalog, signers, owners, maxSendDelayMs } = options;
  const now = options.now ?? Date.now;
  const worstCases = new Map<CatalogModel, bigint>();
  const worstCaseOf = (model: CatalogModel) => {
    let w = worstCases.get(model);
    if (w === undefined) {
      w = requestWorstCase(model);
      worstCases.set(model, w);
    }
    return w;
  };

  function costProblem(e: UsageEventV1): string | null {
    const model = catalog.model(e.model);
    if (!model) return `model ${JSON.stringify(e.model)} is not in billing's catalog`;
    const recomputed = computeCost(model, {
      prompt: e.tokens.prompt,
      completion: e.tokens.completion,
      cached: e.tokens.cached,
      cacheWrite: e.tokens.cache_write,
      cacheWrite1h: e.tokens.cache_write_1h,
      reasoning: e.tokens.reasoning,
    });
    let claimed: bigint | null;
    try {
      claimed = toUnits(e.cost);
    } catch {
      claimed = null; // more decimals than money has: never what the proxy sends
    }
    if (claimed !== recomputed)
      return `cost ${e.cost} does not match ${toDecimal(recomputed)} recomputed from its tokens with billing's catalog`;
    const worst = worstCaseOf(model);
    if (recomputed > worst)
      return `cost ${e.cost} exceeds ${toDecimal(worst)}, the most one request to ${model.id} can cost`;
    return null;
  }

  function timeProblem(e: UsageEvent, sentAt: number, signed: boolean): string | null {
    const finished = Date.parse(e.finished_at);
    const ref = signed ? 'the signed sent-at time' : 'its receipt';
    if (finished > sentAt + CLOCK_SKEW_MS) return `finished_at ${e.finished_at} is after ${ref}`;
    if (finished < sentAt - maxSendDelayMs)
      return `finished_at ${e.finished_at} is more than ${Math.round(maxSendDelayMs / 60_000)} min before ${ref}`;
    return null;
  }

  return {
    verifyMessage(message, events) {
      const receivedAt = now();
      let sentAt = receivedAt;
      let signed = false;
      if (checks.has('signature')) {
        const check = verifyMessageSignature(message.properties.headers, message.content, signers);
        if (!check.ok) return check.reason;
        if (checks.has('time') && check.sentAt > receivedAt + CLOCK_SKEW_MS)
          return `signature: sent-at ${new Date(check.sentAt).toISOString()} is in the future`;
        sentAt = check.sentAt;
        signed = true;
      }
      for (const e of events) {
        const problem =
          (checks.has('time') ? timeProblem(e, sentAt, signed) : null) ??
          // A refusal event carries no cost nor tokens: nothing to recompute, nothing charged.
          (checks.has('cost') && e.type === 'usage' ? costProblem(e) : null);
        if (problem !== null) return `event ${e.id}: ${problem}`;
      }
      return null;
    },

    async foreignKeys(events) {
      const refused = new Map<string, string>();
      if (!checks.has('key') || events.length === 0) return refused;
      const accounts = await owners.accountsOf(events.map((e) => e.key_id));
      for (const e of events) {
        const owner = accounts.get(e.key_id);
        if (owner === undefined) refused.set(e.id, `key ${e.key_id} is unknown to the keys service`);
        else if (owner !== e.account_id)
          refused.set(e.id, `key ${e.key_id} does not belong to account ${e.account_id}`);
      }
      return refused;
    },
  };
}
