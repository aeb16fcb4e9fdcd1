import { badRequest } from '@tollgate/errors';

/** Query strings as single strings of the allowed names; a repeated, nested or unknown parameter is a 400. */
export function plainQuery(
  query: Record<string, unknown>,
  allowed: readonly string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(query)) {
    if (!allowed.includes(k)) throw badRequest(`${k}: unknown parameter`);
    if (typeof v !== 'string') throw badRequest(`${k}: must be given once, as a plain value`);
    out[k] = v;
  }
  return out;
}
