/**
 * Redis key names of the spend layout. Every name carries its ACCOUNT's hash tag (`{<accountId>}`,
 * after the kind so ACL patterns by kind keep working): one account's key, account and team hashes
 * and token counters live in one Redis Cluster hash slot (docs/architecture.md "Redis keys and hash
 * slots"). Everything lives under the prefix (which holds no brace).
 */
export const spendKeyHash = (prefix: string, accountId: string, keyId: string) =>
  `${prefix}spend:key:{${accountId}}:${keyId}`;
/** The key's tokens-per-minute counter of the minute holding `nowMs` (a fixed one-minute window). */
export const spendTokenRateKey = (prefix: string, accountId: string, keyId: string, nowMs: number) =>
  `${prefix}spend:tpm:{${accountId}}:${keyId}:${Math.floor(nowMs / 60_000)}`;
export const spendAccountHash = (prefix: string, accountId: string) => `${prefix}spend:acct:{${accountId}}`;
/**
 * A team's spend hash (issue 29): fields as a key's (period spend, holds). The account id is the
 * Redis Cluster hash tag (a team belongs to one account): same slot as the account's hashes.
 */
export const spendTeamHash = (prefix: string, accountId: string, teamId: string) =>
  `${prefix}spend:team:{${accountId}}:${teamId}`;
/** The team's tokens-per-minute counter of the minute holding `nowMs` (shared by its keys). */
export const spendTeamTokenRateKey = (prefix: string, accountId: string, teamId: string, nowMs: number) =>
  `${prefix}spend:tpm:team:{${accountId}}:${teamId}:${Math.floor(nowMs / 60_000)}`;
