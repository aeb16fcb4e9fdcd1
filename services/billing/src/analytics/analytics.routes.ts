import type { ServiceVerifier } from '@tollgate/auth';
import { accountLatency, accountUsage, type UsageRowView, uuid } from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';
import { parseInput } from '@tollgate/http';
import { toDecimal, toNumber, toUnits } from '@tollgate/money';
import { Router } from 'express';
import { z } from 'zod';
import type { BillingDb } from '../database';
import { accountIdOf, decimalOf, singleQuery } from '../http/account-params';
import { callerOf, keyCaller, serviceCaller } from '../http/caller';
import type { KeyOwners } from '../keys/key-owners';
import { queryActivity, queryUsage, queryUsageJson, type UsageRow } from './analytics.repository';
import { activityByTeam, usageByTeam } from './by-team';
import { percentile, tokensPerSecond } from './latency';
import { type LatencyRow, queryLatency } from './latency.repository';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

const floorTo = (d: Date, unit: number) => new Date(Math.floor(d.getTime() / unit) * unit);
const ceilTo = (d: Date, unit: number) => new Date(Math.ceil(d.getTime() / unit) * unit);

/** The analytics row on the wire: counts as numbers, cost as an exact decimal string (USD). */
function usageRowView(r: UsageRow, groupBy: string): UsageRowView {
  return {
    bucket: r.bucket ? r.bucket.toISOString() : null,
    group: groupBy === 'none' ? null : groupBy === 'app' && r.group === '' ? null : r.group,
    requests: Number(r.requests),
    tokens_prompt: Number(r.tokens_prompt),
    tokens_completion: Number(r.tokens_completion),
    tokens_cached: Number(r.tokens_cached),
    tokens_cache_write: Number(r.tokens_cache_write),
    tokens_reasoning: Number(r.tokens_reasoning),
    cost: decimalOf(r.cost),
  };
}

/** Average and percentiles of one histogram, in its unit rounded, then divided into ms (µs: 1000). */
function figures(hist: readonly string[], sum: number, count: number, perMs = 1) {
  const at = (p: number) => {
    const v = percentile(hist.map(Number), p);
    return v === null ? null : v / perMs;
  };
  return {
    avg: count > 0 ? Math.round(sum / count) / perMs : null,
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
  };
}

/** One group's latency on the wire: averages, percentiles from the histograms, throughput. */
function latencyView(r: LatencyRow): z.input<typeof accountLatency.response>['data']['rows'][number] {
  const requests = Number(r.requests);
  const measured = Number(r.overhead_n);
  return {
    group: r.group,
    requests,
    errors: Number(r.errors),
    error_rate: requests > 0 ? Number(r.errors) / requests : 0,
    ttft_ms: figures(r.hists.ttft, Number(r.ttft_ms), requests),
    total_ms: figures(r.hists.total, Number(r.total_ms), requests),
    gateway_overhead_ms: figures(r.hists.overhead, Number(r.overhead_us), measured, 1000),
    overhead_requests: measured,
    tokens_per_second: tokensPerSecond(Number(r.tokens_completion), Number(r.gen_ms)),
  };
}

const activityQuery = z.strictObject({
  date: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, 'expected a UTC date (YYYY-MM-DD)')
    .optional(),
  api_key_hash: uuid('a key hash (the id the keys API returns)').optional(),
  /** `team` (issue 29): rows split per team, each with its `team_id` (null = keys without a team). */
  group_by: z.enum(['team'], { error: 'expected team' }).optional(),
});

/**
 * Analytics over the hourly roll-ups: the dashboard's internal query API (service token) and the
 * public `GET /activity` (management key, OpenRouter's shape).
 */
export function analyticsRoutes(deps: {
  db: BillingDb;
  verifier: ServiceVerifier;
  owners: KeyOwners;
  clock: () => Date;
}): Router {
  const router = Router();

  router.get(
    '/internal/accounts/:accountId/usage',
    serviceCaller(deps.verifier, ['dashboard']),
    async (req, res) => {
      const accountId = accountIdOf(req);
      const q = parseInput(accountUsage.query, singleQuery(req));
      // Hourly buckets cover whole hours, daily buckets whole UTC days: the range is widened to them.
      const unit = q.granularity === 'day' ? DAY_MS : HOUR_MS;
      const from = floorTo(q.from, unit);
      const to = ceilTo(q.to, unit);
      const byTeam = q.group_by === 'team';
      const query = {
        accountId,
        from,
        to,
        granularity: q.granularity,
        // By team: read per key, then summed per the key's team (by-team.ts).
        groupBy: q.group_by === 'team' ? ('key' as const) : q.group_by,
        filters: { keyId: q.key_id, model: q.model, app: q.app, provider: q.provider },
      };
      // Grouped answers hold the top `limit` groups by cost from `offset` (never every X-Title).
      const rank = q.group_by === 'none' || byTeam ? undefined : { limit: q.limit, offset: q.offset };
      const head = {
        from: from.toISOString(),
        to: to.toISOString(),
        granularity: q.granularity,
        group_by: q.group_by,
      };
      if (!byTeam) {
        // The rows come from Postgres as one JSON text in their wire form (queryUsageJson): spliced
        // into the answer as they are, never parsed here (thousands of rows for an hourly month).
        const read = await queryUsageJson(deps.db, { ...query, rank });
        const nextOffset = read.more ? q.offset + q.limit : null;
        const json = JSON.stringify({ data: { ...head, next_offset: nextOffset } });
        res.type('application/json').send(`${json.slice(0, -2)},"rows":${read.json}}}`);
        return;
      }
      const read = await queryUsage(deps.db, { ...query, rank });
      const rows = await usageByTeam(read.rows, deps.owners);
      const answer: z.input<typeof accountUsage.response> = {
        data: { ...head, rows: rows.map((r) => usageRowView(r, q.group_by)), next_offset: null },
      };
      res.json(answer);
    },
  );

  router.get(
    '/internal/accounts/:accountId/latency',
    serviceCaller(deps.verifier, ['dashboard']),
    async (req, res) => {
      const accountId = accountIdOf(req);
      const q = parseInput(accountLatency.query, singleQuery(req));
      // Beyond two days the range widens to whole UTC days (the daily roll-ups: 24× fewer rows).
      const unit = q.to.getTime() - q.from.getTime() > 2 * DAY_MS ? DAY_MS : HOUR_MS;
      const from = floorTo(q.from, unit);
      const to = ceilTo(q.to, unit);
      const rows = await queryLatency(deps.db, {
        accountId,
        from,
        to,
        granularity: 'total',
        groupBy: q.group_by,
        filters: { keyId: q.key_id, model: q.model, provider: q.provider },
        limit: q.limit,
      });
      const answer: z.input<typeof accountLatency.response> = {
        data: {
          from: from.toISOString(),
          to: to.toISOString(),
          group_by: q.group_by,
          rows: rows.map(latencyView),
        },
      };
      res.json(answer);
    },
  );

  /** OpenRouter's GET /activity: daily usage per model (and provider) for the last 30 completed UTC days. */
  router.get('/activity', keyCaller(deps, 'management'), async (req, res) => {
    const q = parseInput(activityQuery, singleQuery(req));
    const today = new Date(Math.floor(deps.clock().getTime() / DAY_MS) * DAY_MS);
    let from = new Date(today.getTime() - 30 * DAY_MS);
    let to = today;
    if (q.date !== undefined) {
      const day = new Date(`${q.date}T00:00:00Z`);
      if (Number.isNaN(day.getTime()) || day.toISOString().slice(0, 10) !== q.date) {
        throw badRequest('date: expected a UTC date (YYYY-MM-DD)');
      }
      if (day < from || day >= to) throw badRequest('date: must be one of the last 30 completed UTC days');
      from = day;
      to = new Date(day.getTime() + DAY_MS);
    }
    const byTeam = q.group_by === 'team';
    const read = await queryActivity(deps.db, {
      accountId: callerOf(res).accountId,
      from,
      to,
      keyId: q.api_key_hash,
      byKey: byTeam,
    });
    const rows = byTeam
      ? (await activityByTeam(read, deps.owners)).map((r) => ({ ...r, cost: toDecimal(r.cost) }))
      : read;
    res.json({
      data: rows.map((r) => ({
        ...('team_id' in r ? { team_id: r.team_id } : {}),
        date: r.date,
        model: r.model,
        model_permaslug: r.model,
        endpoint_id: `${r.provider_name}:${r.model}`,
        provider_name: r.provider_name,
        usage: toNumber(toUnits(r.cost)),
        byok_usage_inference: 0,
        requests: Number(r.requests),
        prompt_tokens: Number(r.tokens_prompt),
        completion_tokens: Number(r.tokens_completion),
        reasoning_tokens: Number(r.tokens_reasoning),
      })),
    });
  });

  return router;
}
