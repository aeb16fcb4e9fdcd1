import { z } from 'zod';

/**
 * The keys service's internal API. The keys route parses the request and builds the answer with
 * these schemas; the caller (the proxy) parses the answer with them.
 */

const limitReset = z.enum(['daily', 'weekly', 'monthly']);

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
export type ResolvedKey = z.output<typeof cachedKeySchema>;
