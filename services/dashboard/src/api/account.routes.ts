import type { Catalog } from '@tollgate/catalog';
import type {
  AccountCreditsQuery,
  AccountLatencyQuery,
  AccountUsageQuery,
  DashboardAnswerInput,
  ListAccountGenerationsQuery,
  ListAccountSessionsQuery,
  UsageRowView,
} from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';
import { toDecimal, toUnits } from '@tollgate/money';
import { Router } from 'express';
import { requireUser, userOf } from '../http/session';
import { teamRowsOnly } from '../teams/team-scope';
import type { InternalClient } from '../upstream/internal-client';
import { csvCell } from './csv';
import { plainQuery } from './query';

const DAY_MS = 86_400_000;

const USAGE_PARAMS = [
  'from',
  'to',
  'granularity',
  'group_by',
  'key_id',
  'model',
  'app',
  'provider',
  'limit',
  'offset',
  'format',
] as const;
const LATENCY_PARAMS = ['from', 'to', 'group_by', 'key_id', 'model', 'provider', 'limit'] as const;
const GENERATION_PARAMS = [
  'limit',
  'before',
  'offset',
  'sort',
  'order',
  'from',
  'to',
  'model',
  'model_prefix',
  'app',
  'app_prefix',
  'id_prefix',
  'key_id',
  'provider',
  'usage_source',
  'session_id',
] as const;

const startOfDay = (d: Date) => new Date(Math.floor(d.getTime() / DAY_MS) * DAY_MS);
const startOfWeek = (d: Date) => {
  const day = startOfDay(d);
  return new Date(day.getTime() - ((day.getUTCDay() + 6) % 7) * DAY_MS);
};
const startOfMonth = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));

/** USD per token → USD per million tokens, exact. */
const perMillion = (perToken: string) => toDecimal(toUnits(perToken) * 1_000_000n);

/** Pages of groups a CSV export gathers (10 × 1000 groups at most). */
const CSV_MAX_PAGES = 10;

const CSV_COLUMNS = [
  'bucket',
  'group',
  'group_label',
  'requests',
  'tokens_prompt',
  'tokens_completion',
  'tokens_cached',
  'tokens_cache_write',
  'tokens_reasoning',
  'cost_usd',
] as const;

/** The overview page: spend today/this week/this month, credits, top models and apps, 30 days. */
async function overview(
  client: InternalClient,
  accountId: string,
  now: Date,
): Promise<DashboardAnswerInput<'overview'>['data']> {
  const tomorrow = new Date(startOfDay(now).getTime() + DAY_MS).toISOString();
  const from30 = new Date(startOfDay(now).getTime() - 29 * DAY_MS);
  // Top lists ask billing for their five groups only (never every X-Title of the month).
  const total = (from: Date, group_by: AccountUsageQuery['group_by'] = 'none') =>
    client.usage(accountId, {
      from: from.toISOString(),
      to: tomorrow,
      granularity: 'total',
      group_by,
      limit: group_by === 'none' ? undefined : '5',
    });
  const [today, week, month, daily, models, apps, credits] = await Promise.all([
    total(startOfDay(now)),
    total(startOfWeek(now)),
    total(startOfMonth(now)),
    client.usage(accountId, {
      from: from30.toISOString(),
      to: tomorrow,
      granularity: 'day',
      group_by: 'none',
    }),
    total(from30, 'model'),
    total(from30, 'app'),
    client.credits(accountId, { limit: 1 }),
  ]);
  const sum = (r: { rows: UsageRowView[] }) => ({
    cost: r.rows[0]?.cost ?? '0',
    requests: r.rows[0]?.requests ?? 0,
  });
  const byDay = new Map(daily.rows.map((r) => [r.bucket?.slice(0, 10), r]));
  const days = Array.from({ length: 30 }, (_, i) => {
    const date = new Date(from30.getTime() + i * DAY_MS).toISOString().slice(0, 10);
    const r = byDay.get(date);
    return { date, cost: r?.cost ?? '0', requests: r?.requests ?? 0 };
  });
  const top = (r: { rows: UsageRowView[] }) =>
    r.rows.slice(0, 5).map((x) => ({ name: x.group, cost: x.cost, requests: x.requests }));
  return {
    today: sum(today),
    week: sum(week),
    month: sum(month),
    credits: {
      total_credits: credits.total_credits,
      total_usage: credits.total_usage,
      remaining: credits.remaining,
    },
    top_models: top(models),
    top_apps: top(apps),
    daily: days,
  };
}

/** Overview, usage analytics (+ CSV), generations, credits and the model catalog: reads only. */
export function accountRoutes(deps: { client: InternalClient; catalog: Catalog; clock: () => Date }): Router {
  const { client } = deps;
  const router = Router();

  router.get('/api/overview', requireUser, async (_req, res) => {
    res.json({ data: await overview(client, userOf(res).accountId, deps.clock()) });
  });

  router.get('/api/usage', requireUser, async (req, res) => {
    const { format, ...query } = plainQuery(req.query as Record<string, unknown>, USAGE_PARAMS);
    if (format !== undefined && format !== 'json' && format !== 'csv')
      throw badRequest('format: expected json or csv');
    const accountId = userOf(res).accountId;
    // The owner validates the relayed query (its 400 names the parameter).
    const data = await client.usage(accountId, query as AccountUsageQuery);
    data.rows = teamRowsOnly(res, data.group_by, data.rows);
    if (format !== 'csv') {
      res.json({ data });
      return;
    }
    // The file holds every group: further pages of 1000 groups, at most CSV_MAX_PAGES of them.
    let next = data.group_by === 'none' ? null : (data.next_offset ?? null);
    for (let page = 1; next !== null && page < CSV_MAX_PAGES; page++) {
      const more = await client.usage(accountId, {
        ...(query as AccountUsageQuery),
        limit: '1000',
        offset: String(next),
      });
      data.rows.push(...more.rows);
      next = more.next_offset ?? null;
    }
    // Key and team names for those groupings (a label a spreadsheet reader understands).
    const names = new Map<string, string>();
    if (data.group_by === 'key') {
      for (const k of await client.listKeys(accountId, true)) names.set(k.hash, k.name);
    }
    if (data.group_by === 'team') for (const t of await client.teams(accountId)) names.set(t.id, t.name);
    const named = data.group_by === 'key' || data.group_by === 'team';
    const lines = [CSV_COLUMNS.join(',')];
    for (const r of data.rows) {
      const label = named ? (names.get(r.group ?? '') ?? '') : (r.group ?? '');
      lines.push(
        [
          r.bucket ?? '',
          r.group ?? '',
          label,
          r.requests,
          r.tokens_prompt,
          r.tokens_completion,
          r.tokens_cached,
          r.tokens_cache_write,
          r.tokens_reasoning,
          r.cost,
        ]
          .map(csvCell)
          .join(','),
      );
    }
    res.setHeader('content-type', 'text/csv; charset=utf-8');
    res.setHeader(
      'content-disposition',
      `attachment; filename="usage-${data.granularity}-${data.group_by}-${data.from.slice(0, 10)}.csv"`,
    );
    res.send(`${lines.join('\r\n')}\r\n`);
  });

  /** Time to first token, total latency, errors and tokens/s per model or provider (billing's roll-ups). */
  router.get('/api/latency', requireUser, async (req, res) => {
    const query = plainQuery(req.query as Record<string, unknown>, LATENCY_PARAMS);
    res.json({ data: await client.latency(userOf(res).accountId, query as AccountLatencyQuery) });
  });

  router.get('/api/generations', requireUser, async (req, res) => {
    const query = plainQuery(req.query as Record<string, unknown>, GENERATION_PARAMS);
    res.json(await client.generations(userOf(res).accountId, query as ListAccountGenerationsQuery));
  });

  /** Client sessions (Claude Code's, Codex's) with their totals, most recently active first. */
  router.get('/api/sessions', requireUser, async (req, res) => {
    const query = plainQuery(req.query as Record<string, unknown>, ['from', 'to', 'limit', 'offset']);
    res.json(await client.sessions(userOf(res).accountId, query as ListAccountSessionsQuery));
  });

  router.get('/api/generations/:id', requireUser, async (req, res) => {
    res.json({ data: await client.generation(userOf(res).accountId, String(req.params.id)) });
  });

  router.get('/api/credits', requireUser, async (req, res) => {
    const query = plainQuery(req.query as Record<string, unknown>, ['limit', 'before']);
    res.json({ data: await client.credits(userOf(res).accountId, query as AccountCreditsQuery) });
  });

  router.get('/api/models', requireUser, (_req, res) => {
    const answer: DashboardAnswerInput<'models'> = {
      data: deps.catalog.models().map((m) => ({
        id: m.id,
        name: m.name,
        description: m.description,
        context_length: m.contextLength,
        providers: m.providers.map((p) => p.provider.name),
        price_per_million: {
          prompt: perMillion(m.pricing.prompt),
          completion: perMillion(m.pricing.completion),
          cache_read: perMillion(m.pricing.cacheRead),
          cache_write: perMillion(m.pricing.cacheWrite),
        },
        price_per_request: m.pricing.request,
      })),
    };
    res.json(answer);
  });

  return router;
}
