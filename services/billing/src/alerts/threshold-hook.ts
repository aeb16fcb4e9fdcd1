import { prepared } from '@tollgate/db';
import type { UsageEvent } from '@tollgate/events';
import { type LimitReset, toDecimal, toUnits } from '@tollgate/money';
import { sql } from 'kysely';
import type { BillingDb } from '../database';
import type { BatchSums, BatchTotals } from '../usage/usage.repository';
import { LOW_CREDIT, percentOf, reachedThresholds, resetOfPeriod } from './thresholds';

/** A key's limit as the keys service has it now. */
export interface KeyLimit {
  limit: string | null;
  limitReset: LimitReset | null;
  teamId?: string | null;
  /** The key's team's limit and period (the team's alerts). */
  teamLimit?: string | null;
  teamLimitReset?: LimitReset | null;
}

/** Limits of these keys (absent: unknown key). Throws when it cannot tell (the batch waits). */
export type KeyLimitSource = (keyIds: string[]) => Promise<Map<string, KeyLimit>>;

interface AccountAlerting {
  thresholds: Set<number>;
  /** Distinct low-credit amounts of the account's endpoints, in units. */
  lowCredits: Set<bigint>;
}

/** What `prepare` learned before the transaction: only accounts with an enabled endpoint. */
export interface AlertPlan {
  accounts: Map<string, AccountAlerting>;
  limits: Map<string, KeyLimit>;
}

interface Candidate {
  account_id: string;
  scope: 'key' | 'team' | 'account';
  scope_id: string;
  period: string;
  threshold: string;
  payload: object;
}

/**
 * Decides threshold alerts where spend is committed (issue 29): the usage recorder calls `prepare`
 * before its transaction (the batch's accounts' endpoints; the keys' limits, asked of the keys
 * service, only for accounts that have an endpoint) and `decide` inside it, after the spend
 * upserts returned the committed totals. `decide` writes each reached threshold into the outbox
 * (`billing.alerts`, unique per scope, scope id, period and threshold) and one delivery per matching
 * endpoint, in the same transaction: the alert exists exactly when the spend that reached it was
 * committed, whatever the number of billing workers and however often an event is redelivered.
 */
export function createThresholdHook(deps: { keyLimits: KeyLimitSource; clock: () => Date }) {
  return {
    async prepare(db: BillingDb, events: readonly UsageEvent[]): Promise<AlertPlan | null> {
      const accountIds = [...new Set(events.map((e) => e.account_id))];
      // Once per batch: one array parameter (not an `in` list of the batch's length), so the text is
      // fixed and Postgres parses and plans it once per connection (prepared.ts in @tollgate/db).
      const { rows } = await sql<{
        account_id: string;
        thresholds: number[];
        low_credit: string | null;
      }>`${prepared('billing_alert_endpoints')}
        select account_id, thresholds, low_credit
        from billing.webhook_endpoints where enabled and account_id = any(${accountIds}::uuid[])`.execute(db);
      if (rows.length === 0) return null;
      const accounts = new Map<string, AccountAlerting>();
      for (const r of rows) {
        let a = accounts.get(r.account_id);
        if (!a) {
          a = { thresholds: new Set(), lowCredits: new Set() };
          accounts.set(r.account_id, a);
        }
        for (const t of r.thresholds) a.thresholds.add(t);
        if (r.low_credit !== null) a.lowCredits.add(toUnits(r.low_credit));
      }
      const keyIds = [...new Set(events.filter((e) => accounts.has(e.account_id)).map((e) => e.key_id))];
      return { accounts, limits: await deps.keyLimits(keyIds) };
    },

    async decide(
      trx: BillingDb,
      plan: AlertPlan | null,
      sums: Pick<BatchSums, 'keySpend' | 'accountUsage' | 'teamSpend'>,
      totals: BatchTotals,
    ): Promise<number> {
      if (!plan) return 0;
      const at = deps.clock().toISOString();
      const candidates = [
        ...keyCandidates(plan, sums, totals, at),
        ...teamCandidates(plan, sums, totals, at),
        ...(await accountCandidates(trx, plan, sums, totals, at)),
      ];
      if (candidates.length === 0) return 0;
      candidates.sort((a, b) => cmp(key(a), key(b)));
      return writeAlerts(trx, candidates);
    },
  };
}

export type ThresholdHook = ReturnType<typeof createThresholdHook>;

function keyCandidates(
  plan: AlertPlan,
  sums: Pick<BatchSums, 'keySpend'>,
  totals: BatchTotals,
  at: string,
): Candidate[] {
  const totalOf = new Map(totals.keys.map((t) => [`${t.key_id}|${t.period}`, t.amount]));
  const out: Candidate[] = [];
  for (const s of sums.keySpend) {
    const account = plan.accounts.get(s.account_id);
    const lim = plan.limits.get(s.key_id);
    if (!account || !lim || lim.limit === null || resetOfPeriod(s.period) !== lim.limitReset) continue;
    const total = totalOf.get(`${s.key_id}|${s.period}`);
    if (total === undefined) continue;
    const figures = {
      spentUnits: toUnits(total),
      deltaUnits: toUnits(s.amount),
      limitUnits: toUnits(lim.limit),
    };
    for (const pct of reachedThresholds(account.thresholds, figures)) {
      out.push({
        account_id: s.account_id,
        scope: 'key',
        scope_id: s.key_id,
        period: s.period,
        threshold: String(pct),
        payload: {
          type: 'spend.threshold',
          timestamp: at,
          data: {
            account_id: s.account_id,
            scope: 'key',
            key_id: s.key_id,
            team_id: lim.teamId ?? null,
            period: s.period,
            limit_reset: lim.limitReset,
            threshold_percent: pct,
            limit: toDecimal(figures.limitUnits),
            spend: toDecimal(figures.spentUnits),
            percent: percentOf(figures.spentUnits, figures.limitUnits),
          },
        },
      });
    }
  }
  return out;
}

/** Teams with a limit (as their keys in this batch carry it): the same percentages of the team's limit. */
function teamCandidates(
  plan: AlertPlan,
  sums: Pick<BatchSums, 'teamSpend'>,
  totals: BatchTotals,
  at: string,
): Candidate[] {
  const teamLimits = new Map<string, { limit: string; reset: LimitReset | null }>();
  for (const l of plan.limits.values())
    if (l.teamId && l.teamLimit != null)
      teamLimits.set(l.teamId, { limit: l.teamLimit, reset: l.teamLimitReset ?? null });
  const totalOf = new Map(totals.teams.map((t) => [`${t.team_id}|${t.period}`, t.amount]));
  const out: Candidate[] = [];
  for (const s of sums.teamSpend ?? []) {
    const account = plan.accounts.get(s.account_id);
    const lim = teamLimits.get(s.team_id);
    const total = totalOf.get(`${s.team_id}|${s.period}`);
    if (!account || !lim || total === undefined || resetOfPeriod(s.period) !== lim.reset) continue;
    const figures = {
      spentUnits: toUnits(total),
      deltaUnits: toUnits(s.amount),
      limitUnits: toUnits(lim.limit),
    };
    for (const pct of reachedThresholds(account.thresholds, figures)) {
      const data = {
        account_id: s.account_id,
        scope: 'team',
        team_id: s.team_id,
        period: s.period,
        limit_reset: lim.reset,
        threshold_percent: pct,
        limit: toDecimal(figures.limitUnits),
        spend: toDecimal(figures.spentUnits),
        percent: percentOf(figures.spentUnits, figures.limitUnits),
      };
      out.push({
        account_id: s.account_id,
        scope: 'team',
        scope_id: s.team_id,
        period: s.period,
        threshold: String(pct),
        payload: { type: 'spend.threshold', timestamp: at, data },
      });
    }
  }
  return out;
}

/**
 * An account's limit is its prepaid credits (postpaid accounts have none): thresholds of the credits
 * granted, and credits left below each endpoint's low-credit amount. The period is the account's
 * credit state (`credits-v<settings version>`): every grant or correction bumps it, so a top-up
 * re-arms the alerts.
 */
async function accountCandidates(
  trx: BillingDb,
  plan: AlertPlan,
  sums: Pick<BatchSums, 'accountUsage'>,
  totals: BatchTotals,
  at: string,
): Promise<Candidate[]> {
  const spent = sums.accountUsage.filter((a) => plan.accounts.has(a.account_id) && toUnits(a.amount) > 0n);
  if (spent.length === 0) return [];
  const ids = spent.map((a) => a.account_id);
  const { rows } = await sql<{ account_id: string; credits: string; postpaid: boolean; version: string }>`
    select a.id::text as account_id,
      coalesce((select sum(amount) from billing.credit_ledger l where l.account_id = a.id), 0)::text as credits,
      coalesce(s.postpaid, false) as postpaid,
      coalesce(s.version, 0)::text as version
    from unnest(${ids}::uuid[]) as a(id)
    left join billing.account_settings s on s.account_id = a.id`.execute(trx);
  const usageOf = new Map(totals.accounts.map((t) => [t.account_id, toUnits(t.amount)]));
  const out: Candidate[] = [];
  for (const r of rows) {
    const account = plan.accounts.get(r.account_id) as AccountAlerting;
    const creditsUnits = toUnits(r.credits);
    const usageUnits = usageOf.get(r.account_id);
    if (r.postpaid || usageUnits === undefined) continue;
    const period = `credits-v${r.version}`;
    const delta = toUnits(spent.find((a) => a.account_id === r.account_id)?.amount ?? '0');
    const base = { account_id: r.account_id, scope: 'account' as const, scope_id: r.account_id, period };
    const data = {
      account_id: r.account_id,
      scope: 'account',
      period,
      credits: toDecimal(creditsUnits),
      spend: toDecimal(usageUnits),
      remaining: toDecimal(creditsUnits - usageUnits),
    };
    const figures = { spentUnits: usageUnits, deltaUnits: delta, limitUnits: creditsUnits };
    for (const pct of reachedThresholds(account.thresholds, figures)) {
      const payload = {
        type: 'spend.threshold',
        timestamp: at,
        data: {
          ...data,
          threshold_percent: pct,
          limit: data.credits,
          percent: percentOf(usageUnits, creditsUnits),
        },
      };
      out.push({ ...base, threshold: String(pct), payload });
    }
    for (const low of account.lowCredits) {
      if (delta <= 0n || creditsUnits - usageUnits >= low) continue;
      const payload = { type: 'credits.low', timestamp: at, data: { ...data, low_credit: toDecimal(low) } };
      out.push({ ...base, threshold: `${LOW_CREDIT}${toDecimal(low)}`, payload });
    }
  }
  return out;
}

/**
 * One statement: the new alerts (`on conflict do nothing`: a threshold already alerted this period
 * adds nothing) and a delivery for each enabled endpoint of the account that asked for it.
 */
async function writeAlerts(trx: BillingDb, candidates: Candidate[]): Promise<number> {
  const { rows } = await sql<{ n: string }>`
    with c as (
      select * from json_to_recordset(${JSON.stringify(candidates)}::json) as r(
        account_id uuid, scope text, scope_id uuid, period text, threshold text, payload jsonb)
    ), ins as (
      insert into billing.alerts (account_id, scope, scope_id, period, threshold, payload)
      select account_id, scope, scope_id, period, threshold, payload from c
      on conflict on constraint alerts_once do nothing
      returning id, account_id, threshold
    ), d as (
      insert into billing.alert_deliveries (alert_id, endpoint_id, account_id)
      select ins.id, e.id, ins.account_id
      from ins join billing.webhook_endpoints e on e.account_id = ins.account_id and e.enabled
      where case
        when ins.threshold like ${`${LOW_CREDIT}%`} then e.low_credit = substr(ins.threshold, ${LOW_CREDIT.length + 1})::numeric
        else ins.threshold::int = any(e.thresholds)
      end
      returning 1
    )
    select count(*)::text as n from d`.execute(trx);
  return Number(rows[0]?.n ?? 0);
}

const key = (c: Candidate) => `${c.scope}|${c.scope_id}|${c.period}|${c.threshold}`;
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
