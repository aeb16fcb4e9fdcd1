import { createTeamBody, updateTeamBody } from '@tollgate/contracts';
import { parseId } from '@tollgate/http';
import { ADMIN_CLI_ACTOR } from '../audit/audit';
import { teamInput, toTeamObject } from '../teams/team-view';
import { type CommandGroup, defineCommand, UsageError } from './command';
import { allPages, isNone, numberFlag, parseFlagBody } from './flags';

const columns = ['id', 'name', 'keys', 'limit', 'limit_reset', 'rate_limit_tpm', 'created_at'];

const budgetOptions = {
  limit: { type: 'string', description: 'USD spend limit of the team per period (none: no limit)' },
  'limit-reset': { type: 'string', description: 'daily, weekly or monthly (none: never resets)' },
  'rate-limit-tpm': {
    type: 'string',
    description: 'tokens per minute across the team’s keys, worst case at admission (none: no limit)',
  },
} as const;

/** The flags as the API's JSON body (`none` → null), parsed by the API's schema (flags.ts). */
function teamBody(o: { name?: string; limit?: string; 'limit-reset'?: string; 'rate-limit-tpm'?: string }) {
  const body: Record<string, unknown> = {};
  if (o.name !== undefined) body.name = o.name;
  if (o.limit !== undefined) body.limit = numberFlag(o.limit);
  if (o['limit-reset'] !== undefined)
    body.limit_reset = isNone(o['limit-reset']) ? null : o['limit-reset'].trim();
  if (o['rate-limit-tpm'] !== undefined) body.rate_limit_tpm = numberFlag(o['rate-limit-tpm']);
  return body;
}

const row = (t: ReturnType<typeof toTeamObject>) => [
  t.id,
  t.name,
  t.key_count,
  t.limit,
  t.limit_reset,
  t.rate_limit_tpm,
  t.created_at,
];

/** Teams of an account (issue 29): the same service as `/teams` of the management API, audited as the CLI. */
export const teamsCommands: CommandGroup = {
  name: 'teams',
  summary: 'Teams of an account: budgets (USD limit per period, tokens per minute) shared by their keys',
  commands: [
    defineCommand({
      name: 'list',
      summary: "List an account's teams",
      options: { account: { type: 'string', required: true, description: 'account slug' } },
      async run({ runtime }, o) {
        const account = await runtime.accounts.requireBySlug(o.account);
        const teams = (await allPages((offset) => runtime.teams.list(account.id, offset))).map(toTeamObject);
        return { data: teams, table: { columns, rows: teams.map(row) } };
      },
    }),
    defineCommand({
      name: 'create',
      summary: 'Create a team, optionally with a spend limit and a tokens-per-minute limit',
      options: {
        account: { type: 'string', required: true, description: 'account slug' },
        name: { type: 'string', required: true, description: 'team name' },
        ...budgetOptions,
      },
      async run({ runtime }, o) {
        const body = parseFlagBody(createTeamBody, teamBody(o));
        const account = await runtime.accounts.requireBySlug(o.account);
        const team = await runtime.teams.create(
          account.id,
          { ...teamInput(body), name: body.name },
          ADMIN_CLI_ACTOR,
        );
        const object = toTeamObject(team);
        return { data: object, table: { columns, rows: [row(object)] } };
      },
    }),
    defineCommand({
      name: 'update',
      summary: "Change a team's name, spend limit, reset period or tokens-per-minute limit",
      options: {
        account: { type: 'string', required: true, description: 'account slug' },
        id: { type: 'string', required: true, description: 'team id (uuid)' },
        name: { type: 'string', description: 'new name' },
        ...budgetOptions,
      },
      async run({ runtime }, o) {
        const body = parseFlagBody(updateTeamBody, teamBody(o));
        if (Object.keys(body).length === 0) {
          throw new UsageError('nothing to change: give --name, --limit, --limit-reset or --rate-limit-tpm');
        }
        const account = await runtime.accounts.requireBySlug(o.account);
        const team = await runtime.teams.update(
          account.id,
          parseId(o.id, 'id', 'a team id'),
          { ...teamInput(body), name: body.name },
          ADMIN_CLI_ACTOR,
        );
        const object = toTeamObject(team);
        return { data: object, table: { columns, rows: [row(object)] } };
      },
    }),
    defineCommand({
      name: 'delete',
      summary: 'Delete a team (refused while keys that are not revoked belong to it)',
      options: {
        account: { type: 'string', required: true, description: 'account slug' },
        id: { type: 'string', required: true, description: 'team id (uuid)' },
      },
      async run({ runtime }, o) {
        const account = await runtime.accounts.requireBySlug(o.account);
        const id = parseId(o.id, 'id', 'a team id');
        await runtime.teams.remove(account.id, id, ADMIN_CLI_ACTOR);
        return { data: { id, deleted: true }, text: `deleted team ${id}` };
      },
    }),
  ],
};
