import type { RedisClient } from '@tollgate/redis';
import { spendKeyHash } from './keys';

/** A key's committed spend per period field (`d…`, `w…`, `m…`, `all`), in units. */
export type CommittedKeySpend = Map<string, bigint>;

/**
 * Read-only: the committed spend of keys as the billing worker last wrote it to their key hashes
 * (each field is a Postgres total after a commit, raised monotonically; see COMMIT and LOAD_KEY), for
 * the given period fields. One round trip (an HMGET per key, in one write on a client that batches them — auto-pipelining or `batchWrites`; on a cluster each to its
 * account's node). A key whose hash is
 * missing or was never built from Postgres (`_ok` absent: no limited request since the hash expired,
 * or a rebuild under way for a new hash) maps to null: the caller must ask billing (Postgres) instead.
 * A built hash with no field for a period means nothing was committed in it (the first commit of a
 * period writes its field). Throws when Redis does not answer.
 */
export async function readCommittedKeySpend(
  redis: RedisClient,
  prefix: string,
  keys: ReadonlyArray<{ keyId: string; accountId: string }>,
  periods: readonly string[],
): Promise<Map<string, CommittedKeySpend | null>> {
  const out = new Map<string, CommittedKeySpend | null>();
  if (keys.length === 0) return out;
  const fields = ['_ok', ...periods];
  // One command per key (a pipeline may not span cluster nodes); a node client that batches
  // (auto-pipelining, `batchWrites`) sends them in one write.
  const rows = await Promise.all(
    keys.map((k) => redis.hmget(spendKeyHash(prefix, k.accountId, k.keyId), ...fields)),
  );
  keys.forEach(({ keyId: id }, i) => {
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
