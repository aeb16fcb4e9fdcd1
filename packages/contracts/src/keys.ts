import { LIMIT_RESETS } from '@tollgate/money';
import { z } from 'zod';
import { accountPath, displayName, limitReset, unknownParameter, usdAmountInput } from './common';
import { uuid } from './ids';

/**
 * The keys service's internal API. The keys routes parse requests and build answers with these
 * schemas; the callers (the proxy's key resolver, the dashboard) parse the answers with them.
 */

/** The key record the proxy caches and decides on (disabled/revoked included: the proxy answers 401). */
export const cachedKeySchema = z.object({
  id: z.string(),
  accountId: z.string(),
  scope: z.enum(['inference', 'management']),
  disabled: z.boolean(),
  revoked: z.boolean(),
  /** USD decimal string, or null for no limit. */
  limit: z.string().nullable(),
  limitReset: limitReset.nullable(),
  /**
   * Governance (CachedKey in @tollgate/key-cache; optional like there). Without them here the
   * proxy's parse dropped them: a key read after a cache miss had no expiry, model list or rate limit.
   */
  expiresAt: z.number().int().nullable().optional(),
  allowedModels: z.array(z.string()).optional(),
  rateLimitRpm: z.number().int().nullable().optional(),
  rateLimitTpm: z.number().int().nullable().optional(),
  /** The prompt and answer of its requests are kept (opt-in bodies, issue 28); absent = no. */
  storeBodies: z.boolean().optional(),
  /** The key's team (issue 29); absent or null = none. */
  teamId: z.string().nullable().optional(),
  /** The team's budget, copied into the record (CachedKey); absent = none. */
  teamLimit: z.string().nullable().optional(),
  teamLimitReset: limitReset.nullable().optional(),
  teamRateLimitTpm: z.number().int().nullable().optional(),
  version: z.number().int(),
});

/** `POST /internal/keys/resolve` (caller: proxy). 404 = no key has this digest. */
export const resolveKey = {
  method: 'POST',
  path: '/internal/keys/resolve',
  request: z.object({
    digest: z
      .string({ error: 'expected a string' })
      .regex(/^[0-9a-f]{64}$/, { error: 'must be a lowercase sha256 hex digest' }),
  }),
  response: z.object({ data: cachedKeySchema }),
} as const;

export type ResolveKeyRequest = z.input<typeof resolveKey.request>;

/** Who owns a key and whether it still works: what billing checks usage events and callers against. */
export const keyOwnerSchema = z.object({
  id: uuid('a key id'),
  accountId: uuid('an account id'),
  scope: z.enum(['inference', 'management']),
  disabled: z.boolean(),
  revoked: z.boolean(),
  /** ISO time, or null for no expiry. */
  expiresAt: z.string().nullable(),
  /** The key's spend limit (USD decimal string) and its period, for billing's threshold alerts. */
  limit: z.string().nullable().optional(),
  limitReset: limitReset.nullable().optional(),
  /** The key's team; absent or null = none. */
  teamId: z.string().nullable().optional(),
  /** The team's spend limit (USD decimal string) and its period, for team threshold alerts. */
  teamLimit: z.string().nullable().optional(),
  teamLimitReset: limitReset.nullable().optional(),
});

/**
 * `POST /internal/keys/owners` (caller: billing): the keys of these ids that exist (unknown ids are
 * left out). Billing learns key → account here instead of reading keys' tables.
 */
export const keyOwners = {
  method: 'POST',
  path: '/internal/keys/owners',
  request: z.object({
    ids: z
      .array(uuid('a key id'), { error: 'expected an array of key ids' })
      .min(1, { error: 'must name at least one key' })
      .max(1000, { error: 'must name at most 1000 keys' }),
  }),
  response: z.object({ data: z.array(keyOwnerSchema) }),
} as const;

export type KeyOwner = z.output<typeof keyOwnerSchema>;
export type ResolvedKey = z.output<typeof cachedKeySchema>;

// ---------------------------------------------------------------------------------------------------
// Key bodies: the public management API (POST/PATCH /keys) and the dashboard's routes parse with these.

/** Highest accepted spend limit in USD (the column is numeric(20,10)). */
const MAX_LIMIT_USD = 1_000_000_000;

const name = displayName;

/** A USD amount as a JSON number: finite, >= 0, at most 10 decimal places; becomes a decimal string. */
const limit = usdAmountInput(MAX_LIMIT_USD);

export const limitResetInput = z.enum(LIMIT_RESETS, {
  error: `expected one of ${LIMIT_RESETS.join(', ')}, or null`,
});

/** ISO 8601 date-time with a zone (`Z` or an offset); must lie in the future. */
const expiresAt = z
  .string({ error: 'expected an ISO 8601 date-time (e.g. 2030-01-01T00:00:00Z) or null' })
  .refine((s) => z.iso.datetime({ offset: true }).safeParse(s).success, {
    error: 'expected an ISO 8601 date-time with a time zone (e.g. 2030-01-01T00:00:00Z) or null',
  })
  .transform((s) => new Date(s))
  .refine((d) => Number.isFinite(d.getTime()), { error: 'is not a valid date' })
  .refine((d) => d.getTime() > Date.now(), { error: 'must be in the future' });

/** Highest accepted allow-list length and per-key requests per minute. */
const MAX_ALLOWED_MODELS = 200;
const MAX_RATE_LIMIT_RPM = 1_000_000;

/** A model id (`vendor/name`) or a vendor pattern (`vendor/*`). */
const MODEL_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*\/(\*|[A-Za-z0-9][A-Za-z0-9._:-]*(\/[A-Za-z0-9._:-]+)*)$/;

const allowedModels = z
  .array(
    z
      .string({ error: 'expected model ids (vendor/name) or vendor/* patterns' })
      .max(200, { error: 'each entry must be at most 200 characters' })
      .regex(MODEL_PATTERN, { error: 'each entry must be a model id (vendor/name) or a vendor/* pattern' }),
    { error: 'expected an array of model ids (vendor/name) or vendor/* patterns' },
  )
  .max(MAX_ALLOWED_MODELS, { error: `must have at most ${MAX_ALLOWED_MODELS} entries` })
  .transform((list) => [...new Set(list)]);

const rateLimitRpm = z
  .number({ error: 'expected a positive integer (requests per minute) or null' })
  .int({ error: 'must be an integer' })
  .min(1, { error: 'must be at least 1 (null removes the limit)' })
  .max(MAX_RATE_LIMIT_RPM, { error: `must be at most ${MAX_RATE_LIMIT_RPM}` });

const MAX_RATE_LIMIT_TPM = 1_000_000_000;
const rateLimitTpm = z
  .number({ error: 'expected a positive integer (tokens per minute) or null' })
  .int({ error: 'must be an integer' })
  .min(1, { error: 'must be at least 1 (null removes the limit)' })
  .max(MAX_RATE_LIMIT_TPM, { error: `must be at most ${MAX_RATE_LIMIT_TPM}` });

/** The spend-limit and tokens-per-minute inputs, shared with the team bodies (teams.ts). */
export { limit as usdLimitInput, rateLimitTpm as rateLimitTpmInput };

const includeByok = z.boolean({ error: 'expected true or false' });
/** Opt-in bodies (issue 28): keep the prompt and the answer of the key's requests (bounded, redacted). */
const storeBodies = z.boolean({ error: 'expected true or false' });

/** A team of the key's account (`GET /teams`), or null for none. */
const teamId = z
  .string({ error: 'expected a team id (uuid) or null' })
  .pipe(uuid('a team id'))
  .transform((s) => s.toLowerCase());

/** What a key's create and update bodies both may set (each optional; null clears it). */
const keySettings = {
  limit: limit.nullable().optional(),
  limit_reset: limitResetInput.nullable().optional(),
  expires_at: expiresAt.nullable().optional(),
  include_byok_in_limit: includeByok.optional(),
  allowed_models: allowedModels.optional(),
  rate_limit_rpm: rateLimitRpm.nullable().optional(),
  rate_limit_tpm: rateLimitTpm.nullable().optional(),
  store_bodies: storeBodies.optional(),
  team_id: teamId.nullable().optional(),
};

export const createKeyBody = z.strictObject({ name, ...keySettings });

export const updateKeyBody = z.strictObject({
  name: name.optional(),
  disabled: z.boolean({ error: 'expected true or false' }).optional(),
  ...keySettings,
});

/** Create body of the dashboard's route: the public body plus the management-key option. */
export const accountKeyCreateBody = createKeyBody.extend({
  management: z.boolean({ error: 'expected true or false' }).optional(),
});

// ---------------------------------------------------------------------------------------------------
// The key object (spec §2.1 plus DESIGN.md's and OpenRouter's fields): the public API's and the
// dashboard's answer. Figures are USD JSON numbers.

export const keyObjectSchema = z.object({
  hash: z.string(),
  name: z.string(),
  label: z.string(),
  scope: z.enum(['inference', 'management']),
  limit: z.number().nullable(),
  limit_reset: limitReset.nullable(),
  disabled: z.boolean(),
  revoked: z.boolean(),
  last_used_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  usage: z.number(),
  limit_remaining: z.number().nullable(),
  usage_daily: z.number(),
  usage_weekly: z.number(),
  usage_monthly: z.number(),
  // Governance.
  expires_at: z.string().nullable(),
  include_byok_in_limit: z.boolean(),
  allowed_models: z.array(z.string()),
  rate_limit_rpm: z.number().int().nullable(),
  /** Tokens per minute (worst case at admission), null = none. */
  rate_limit_tpm: z.number().int().nullable(),
  /** Opt-in bodies (issue 28): its requests' prompt and answer are kept. */
  store_bodies: z.boolean(),
  /** The key's team (issue 29), null = none. */
  team_id: z.string().nullable(),
  // OpenRouter's fields for concepts Tollgate does not have (neutral values, docs/api.md).
  byok_usage: z.literal(0),
  byok_usage_daily: z.literal(0),
  byok_usage_weekly: z.literal(0),
  byok_usage_monthly: z.literal(0),
  creator_user_id: z.null(),
  external_user: z.null(),
  /** The key's account: Tollgate's only grouping of keys. */
  workspace_id: z.string(),
});
export type KeyObject = z.output<typeof keyObjectSchema>;

// ---------------------------------------------------------------------------------------------------
// The dashboard's routes (caller: dashboard; the account is in the path, the dashboard checked the
// signed-in user belongs to it).

/**
 * An account: its names and its settings (`GET /account` of the management API, the dashboard's
 * `GET /api/me` and `PATCH /api/account`). `store_bodies`: opt-in bodies for every key of the
 * account (issue 28), whatever each key's own `store_bodies` says; off by default.
 */
export const accountObjectSchema = z.object({
  id: z.string(),
  slug: z.string(),
  name: z.string(),
  store_bodies: z.boolean(),
});
export type AccountObject = z.output<typeof accountObjectSchema>;

/** `PATCH /account` (management key) and the dashboard's `PATCH /api/account`: the account's settings. */
export const updateAccountBody = z.strictObject({ store_bodies: storeBodies.optional() });
export type UpdateAccountRequest = z.input<typeof updateAccountBody>;

/** `GET /internal/accounts/:accountId`: the account (404 unless it exists). */
export const getAccount = {
  method: 'GET',
  path: accountPath,
  response: z.object({ data: accountObjectSchema }),
} as const;

/** `PATCH /internal/accounts/:accountId`: changes its settings, audited for the acting user. */
export const updateAccount = {
  method: 'PATCH',
  path: accountPath,
  request: updateAccountBody,
  response: z.object({ data: accountObjectSchema }),
} as const;

/** `GET /internal/accounts/:accountId/keys`: one page of keys (both scopes), oldest first. */
export const listAccountKeys = {
  method: 'GET',
  path: (accountId: string) => `${accountPath(accountId)}/keys`,
  query: z.strictObject(
    {
      include_revoked: z.enum(['true', 'false'], { error: 'must be true or false' }).optional(),
      offset: z
        .string()
        .regex(/^\d{1,9}$/, { error: 'must be a non-negative integer' })
        .optional(),
    },
    unknownParameter,
  ),
  /** `next_offset`: the next page's offset, null on the last page. */
  response: z.object({ data: z.array(keyObjectSchema), next_offset: z.number().int().nullable() }),
} as const;

/** `POST /internal/accounts/:accountId/keys`: the answer carries the plaintext key once. */
export const createAccountKey = {
  method: 'POST',
  path: (accountId: string) => `${accountPath(accountId)}/keys`,
  request: accountKeyCreateBody,
  response: z.object({ data: keyObjectSchema.extend({ key: z.string() }) }),
} as const;
export type CreateAccountKeyRequest = z.input<typeof createAccountKey.request>;

/** `PATCH /internal/accounts/:accountId/keys/:hash`. */
export const updateAccountKey = {
  method: 'PATCH',
  path: (accountId: string, hash: string) => `${accountPath(accountId)}/keys/${encodeURIComponent(hash)}`,
  request: updateKeyBody,
  response: z.object({ data: keyObjectSchema }),
} as const;
export type UpdateAccountKeyRequest = z.input<typeof updateAccountKey.request>;

/** `DELETE /internal/accounts/:accountId/keys/:hash`: revokes any key, management keys included. */
export const revokeAccountKey = {
  method: 'DELETE',
  path: (accountId: string, hash: string) => `${accountPath(accountId)}/keys/${encodeURIComponent(hash)}`,
  response: z.object({ data: z.object({ hash: z.string(), deleted: z.literal(true) }) }),
} as const;
