/**
 * Ids: every id Tollgate hands out (accounts, keys, key hashes, teams, users) is a Postgres `uuid`,
 * printed lowercase. One pattern for all of them: a route's path parameter accepts any case (and the
 * route lowercases it); a caller identity signed by a service (a token's claims, the acting user
 * header) must be exactly as Postgres printed it.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A uuid in its text form, hex digits of either case. */
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);

/** A uuid exactly as Postgres prints one (lowercase): what a service puts into a signed identity. */
export const isCanonicalUuid = (value: unknown): value is string =>
  typeof value === 'string' && CANONICAL_UUID.test(value);
