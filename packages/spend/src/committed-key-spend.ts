import type { RedisClient } from '@tollgate/redis';
import { spendKeyHash } from './keys';

/** A key's committed spend per period field (`d…`, `w…`, `m…`, `all`), in units. */
export type CommittedKeySpend = Map<string, bigint>;

/**
 * Read-only: the committed spend of keys as the billing worker last wrote it to their key hashes
 * (each field is a Postgres total after a commit, raised monotonically; see COMMIT and LOAD_KEY), for
 * the given period fields. One round trip (HMGET, pipelined for several keys). A key whose hash is
 * missing or was never built from Postgres (`_ok` absent: no limited request since the hash expired,
 * or a rebuild under way for a new hash) maps to null: the caller must ask billing (Postgres) instead.
 * A built hash with no field for a period means nothing was committed in it (the first commit of a
 * period writes its field). Throws when Redis does not answer.
 */
export async function readCommittedKeySpend(
  redis: RedisClient,
  prefix: string,
  keyIds: readonly string[],
  periods: readonly string[],
): Promise<Map<string, CommittedKeySpend | null>> {
  const out = new Map<string, CommittedKeySpend | null>();
  if (keyIds.length === 0) return out;
  const fields = ['_ok', ...periods];
  let rows: Array<Array<string | null>>;
  if (keyIds.length === 1) {
    rows = [await redis.hmget(spendKeyHash(prefix, keyIds[0] as string), ...fields)];
  } else {
    const pipeline = redis.pipeline();
    for (const id of keyIds) pipeline.hmget(spendKeyHash(prefix, id), ...fields);
    const results = (await pipeline.exec()) ?? [];
    rows = results.map(([err, v]) => {
      if (err) throw err;
      return v as Array<string | null>;
    });
  }
  keyIds.forEach((id, i) => {
    const row = rows[i];
    if (!row || row[0] === null || row[0] === undefined) {
      out.set(id, null);
      return;
    }
    const spend: CommittedKeySpend = new Map();
    periods.forEach((p, j) => {
      const v = row[j + 1];
      spend.set(p, v && /^\d+$/.test(v) ? BigInt(v) : 0n);
    });
    out.set(id, spend);
  });
  return out;
}
