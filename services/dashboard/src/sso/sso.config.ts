import { envBoolean } from '@tollgate/config';
import { isUuid, uuid } from '@tollgate/contracts';
import { z } from 'zod';
import type { Role } from '../database';

/**
 * Single sign-on (OpenID Connect, authorization code with PKCE). Deployment-level: one identity
 * provider per dashboard deployment, whose users belong to one account (`OIDC_ACCOUNT_ID`, the
 * common case of a company-wide gateway with one account per company). Off unless OIDC_ISSUER is set.
 */
export const ssoEnv = {
  /** The provider's issuer URL (its discovery document is `<issuer>/.well-known/openid-configuration`). */
  OIDC_ISSUER: z.string().url().optional(),
  OIDC_CLIENT_ID: z.string().min(1).optional(),
  OIDC_CLIENT_SECRET: z.string().min(1).optional(),
  /** Where the provider sends the browser back; default `<PUBLIC_URL>/api/sso/callback`. */
  OIDC_REDIRECT_URL: z.string().url().optional(),
  /** Space-separated; `openid` is required. */
  OIDC_SCOPES: z.string().min(1).default('openid email profile'),
  /** The account every SSO user belongs to (keys' account id). */
  OIDC_ACCOUNT_ID: uuid('an account id').optional(),
  /** The claim holding the user's groups (an array of strings, or one string). */
  OIDC_GROUPS_CLAIM: z.string().min(1).default('groups'),
  /** Comma-separated group names: members are owners / viewers of the account. */
  OIDC_OWNER_GROUPS: z.string().default(''),
  OIDC_VIEWER_GROUPS: z.string().default(''),
  /** `group=<team id>,…`: members of the group are members of the team (team viewers unless owner/viewer). */
  OIDC_TEAM_GROUPS: z.string().default(''),
  /** Whether a first sign-in whose groups map creates the user (else an owner invites them first). */
  OIDC_CREATE_USERS: envBoolean(true),
  /** Password sign-in (and accepting invitations with a password) on or off. */
  PASSWORD_SIGN_IN: envBoolean(true),
};

export interface SsoSettings {
  issuer: URL;
  clientId: string;
  clientSecret: string;
  redirectUrl: string;
  scopes: string;
  accountId: string;
  groupsClaim: string;
  ownerGroups: Set<string>;
  viewerGroups: Set<string>;
  /** group → team ids. */
  teamGroups: Map<string, string[]>;
  createUsers: boolean;
}

type SsoEnv = z.output<z.ZodObject<typeof ssoEnv>> & { NODE_ENV: string };

const list = (s: string) =>
  s
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

/** Checks the SSO settings together (a superRefine of the dashboard's schema). */
export function checkSsoEnv(c: SsoEnv, ctx: z.RefinementCtx): void {
  if (!c.OIDC_ISSUER) {
    if (!c.PASSWORD_SIGN_IN)
      ctx.addIssue({
        code: 'custom',
        path: ['PASSWORD_SIGN_IN'],
        message: 'off needs OIDC_ISSUER (no way in)',
      });
    return;
  }
  for (const name of ['OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET', 'OIDC_ACCOUNT_ID'] as const) {
    if (!c[name]) ctx.addIssue({ code: 'custom', path: [name], message: 'required with OIDC_ISSUER' });
  }
  if (c.NODE_ENV === 'production' && new URL(c.OIDC_ISSUER).protocol !== 'https:')
    ctx.addIssue({ code: 'custom', path: ['OIDC_ISSUER'], message: 'must be https in production' });
  if (!c.OIDC_SCOPES.split(/\s+/).includes('openid'))
    ctx.addIssue({ code: 'custom', path: ['OIDC_SCOPES'], message: 'must include openid' });
  for (const pair of list(c.OIDC_TEAM_GROUPS)) {
    const [group, team] = pair.split('=');
    if (!group?.trim() || !team || !isUuid(team.trim()))
      ctx.addIssue({
        code: 'custom',
        path: ['OIDC_TEAM_GROUPS'],
        message: `"${pair}": expected group=<team id>`,
      });
  }
  if (!c.OIDC_OWNER_GROUPS && !c.OIDC_VIEWER_GROUPS && !c.OIDC_TEAM_GROUPS)
    ctx.addIssue({
      code: 'custom',
      path: ['OIDC_OWNER_GROUPS'],
      message: 'name at least one group (OIDC_OWNER_GROUPS, OIDC_VIEWER_GROUPS or OIDC_TEAM_GROUPS)',
    });
}

/** The parsed settings, or null when SSO is off. */
export function ssoSettings(c: SsoEnv & { PUBLIC_URL: string }): SsoSettings | null {
  if (!c.OIDC_ISSUER) return null;
  const teamGroups = new Map<string, string[]>();
  for (const pair of list(c.OIDC_TEAM_GROUPS)) {
    const [group = '', team = ''] = pair.split('=').map((v) => v.trim());
    teamGroups.set(group, [...(teamGroups.get(group) ?? []), team.toLowerCase()]);
  }
  return {
    issuer: new URL(c.OIDC_ISSUER),
    clientId: c.OIDC_CLIENT_ID as string,
    clientSecret: c.OIDC_CLIENT_SECRET as string,
    redirectUrl: c.OIDC_REDIRECT_URL ?? `${c.PUBLIC_URL.replace(/\/$/, '')}/api/sso/callback`,
    scopes: c.OIDC_SCOPES,
    accountId: (c.OIDC_ACCOUNT_ID as string).toLowerCase(),
    groupsClaim: c.OIDC_GROUPS_CLAIM,
    ownerGroups: new Set(list(c.OIDC_OWNER_GROUPS)),
    viewerGroups: new Set(list(c.OIDC_VIEWER_GROUPS)),
    teamGroups,
    createUsers: c.OIDC_CREATE_USERS,
  };
}

/** What the user's groups grant: a role and teams, or nothing (no access). */
export function mapGroups(s: SsoSettings, claim: unknown): { role: Role; teams: string[] } | null {
  const groups = Array.isArray(claim)
    ? claim.filter((g): g is string => typeof g === 'string')
    : typeof claim === 'string'
      ? [claim]
      : [];
  const teams = [...new Set(groups.flatMap((g) => s.teamGroups.get(g) ?? []))].sort();
  if (groups.some((g) => s.ownerGroups.has(g))) return { role: 'owner', teams };
  if (groups.some((g) => s.viewerGroups.has(g))) return { role: 'viewer', teams };
  if (teams.length > 0) return { role: 'member', teams };
  return null;
}
