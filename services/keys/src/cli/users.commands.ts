import {
  type CreateUserRequest,
  createUser,
  type SetUserTeamsRequest,
  setUserTeams,
} from '@tollgate/contracts';
import { type CommandGroup, defineCommand, UsageError } from './command';
import { isNone, parseFlagBody } from './flags';
import { callService, serviceTarget } from './service-call';

/**
 * Dashboard users (owned by the dashboard service, schema `dashboard`): the CLI creates an account's
 * first owner through the dashboard's internal API (DASHBOARD_URL, default the `make dev` address)
 * and prints the one-time sign-in link; owners invite everyone else from the dashboard.
 */
export const usersCommands: CommandGroup = {
  name: 'users',
  summary: 'Dashboard users (sign in to the web dashboard)',
  commands: [
    defineCommand({
      name: 'create',
      summary: 'Create a dashboard user of an account; prints a one-time sign-in link',
      options: {
        account: { type: 'string', required: true, description: 'account slug, e.g. acme' },
        email: { type: 'string', required: true, description: 'the user’s email (their sign-in name)' },
        role: {
          type: 'string',
          required: true,
          description: 'owner (changes things) or viewer (sees everything)',
        },
        name: { type: 'string', description: 'display name (default: the part of the email before @)' },
      },
      async run(ctx, o) {
        if (o.role !== 'owner' && o.role !== 'viewer') {
          throw new UsageError(`--role must be owner or viewer, got "${o.role}"`);
        }
        const account = await ctx.runtime.accounts.requireBySlug(o.account);
        const body: CreateUserRequest = {
          account_id: account.id,
          email: o.email,
          display_name: o.name ?? o.email.split('@')[0] ?? o.email,
          role: o.role,
        };
        const { data } = await callService(
          serviceTarget(ctx, 'dashboard'),
          createUser.method,
          createUser.path,
          body,
          createUser.response,
        );
        return {
          data: { ...data, account: account.slug },
          text: [
            `Created ${data.role} ${data.email} of ${account.slug}.`,
            `One-time sign-in link (valid until ${data.expires_at}; the user chooses a password there):`,
            '',
            `  ${data.sign_in_link}`,
          ].join('\n'),
        };
      },
    }),
    defineCommand({
      name: 'set-teams',
      summary:
        "Set a dashboard user's team memberships (a user with role member sees only their teams' keys and usage)",
      options: {
        account: { type: 'string', required: true, description: 'account slug, e.g. acme' },
        email: { type: 'string', required: true, description: 'the user’s email' },
        'team-ids': {
          type: 'string',
          required: true,
          description: 'comma-separated team ids (uuid) the user is a member of (none: no team)',
        },
      },
      async run(ctx, o) {
        const account = await ctx.runtime.accounts.requireBySlug(o.account);
        const teamIds = o['team-ids'];
        const body: SetUserTeamsRequest = parseFlagBody(setUserTeams.request, {
          account_id: account.id,
          email: o.email,
          team_ids: isNone(teamIds)
            ? []
            : teamIds
                .split(',')
                .map((t) => t.trim())
                .filter(Boolean),
        });
        const { data } = await callService(
          serviceTarget(ctx, 'dashboard'),
          setUserTeams.method,
          setUserTeams.path,
          body,
          setUserTeams.response,
        );
        return {
          data: { ...data, account: account.slug },
          text: `${data.email} of ${account.slug}: ${data.team_ids.length ? `member of ${data.team_ids.join(', ')}` : 'no team'}`,
        };
      },
    }),
  ],
};
