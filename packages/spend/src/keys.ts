/**
 * Redis key names of the spend layout. Every name carries its ACCOUNT's hash tag (`{<accountId>}`,
 * after the kind so ACL patterns by kind keep working): one account's key hashes, account hash, team
 * hashes and token counters live in one Redis Cluster hash slot, so every admit/settle/renew/commit
 * script call — which touches only one account's names — runs on one node (docs/architecture.md
 * "Redis keys and hash slots"). Everything lives under the prefix (which holds no brace).
 */
export const spendKeyHash = (prefix: string, accountId: string, keyId: string) =>
  `${prefix}spend:key:{${accountId}}:${keyId}`;
/** The key's tokens-per-minute counter of the minute holding `nowMs` (a fixed one-minute window). */
export const spendTokenRateKey = (prefix: string, accountId: string, keyId: string, nowMs: number) =>
  `${prefix}spend:tpm:{${accountId}}:${keyId}:${Math.floor(nowMs / 60_000)}`;
export const spendAccountHash = (prefix: string, accountId: string) => `${prefix}spend:acct:{${accountId}}`;
