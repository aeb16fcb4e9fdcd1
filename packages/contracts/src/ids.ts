/**
 * Ids: every id Tollgate hands out (accounts, keys, key hashes, teams, users, webhooks) is a Postgres
 * `uuid`, printed lowercase. One pattern for all of them, and one refusal: a route's path or query id
 * and a contract's id field accept any case (`uuid`, a contract's field; `parseId` of @tollgate/http, a
 * path parameter read by hand, which also lowercases it) and refuse anything else with the same 400,
 * "<field>: must be <what> (uuid)" (`metadata.field` names the field); a caller identity signed by a
 * service (a token's claims, the acting user header) must be exactly as Postgres printed it.
 */
import { z } from 'zod';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A uuid in its text form, hex digits of either case. */
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);

/** A uuid exactly as Postgres prints one (lowercase): what a service puts into a signed identity. */
export const isCanonicalUuid = (value: unknown): value is string =>
  typeof value === 'string' && CANONICAL_UUID.test(value);

/** What a malformed id is told, after its field's name: `must be a team id (uuid)`. */
export const badIdMessage = (what: string): string => `must be ${what} (uuid)`;

/** An id field of a contract (a uuid of either case): `what` names it in the 400, "a key id". */
export const uuid = (what: string) =>
  z.string({ error: badIdMessage(what) }).regex(UUID, { error: badIdMessage(what) });
