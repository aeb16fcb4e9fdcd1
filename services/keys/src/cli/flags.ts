import { describeIssues } from '@tollgate/errors';
import type { z } from 'zod';
import { UsageError } from './command';

/**
 * Command-line flags read as the management API's JSON body, so the CLI keeps the API's rules and
 * messages (keys.commands.ts, teams.commands.ts): `none` clears a setting, numbers become numbers,
 * and the body is parsed by the API's own schema; a refusal names the flag (exit code 2).
 */

/** `none` (any case): the flag clears its setting. */
export const isNone = (v: string) => v.trim().toLowerCase() === 'none';

/**
 * A numeric flag: `none` → null, a number (`pattern`: what counts as one) → that number, anything
 * else → the text, for the schema to refuse with its message.
 */
export function numberFlag(v: string, pattern = /^-?\d+(\.\d+)?$/): number | string | null {
  const text = v.trim();
  return isNone(text) ? null : pattern.test(text) ? Number(text) : text;
}

/** Parses a body built from flags with the API's schema; its refusal is a usage error naming the flag. */
export function parseFlagBody<S extends z.ZodType>(schema: S, body: Record<string, unknown>): z.output<S> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const field = String(result.error.issues[0]?.path[0] ?? '');
  const message = describeIssues(result.error.issues).replace(/^[^:]*: /, '');
  // The flag of a body field: its name with dashes (`rate_limit_tpm` → `--rate-limit-tpm`).
  throw new UsageError(`--${field.replaceAll('_', '-')}: ${message}`);
}

/** Every item of a listing served 100 at a time (`page(offset)`), in order. */
export async function allPages<T>(page: (offset: number) => Promise<readonly T[]>): Promise<T[]> {
  const items: T[] = [];
  for (let offset = 0; ; ) {
    const got = await page(offset);
    items.push(...got);
    if (got.length < 100) return items;
    offset += got.length;
  }
}
