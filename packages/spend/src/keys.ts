/** Redis key of a key's spend hash and of an account's hash. Everything lives under the prefix. */
export const spendKeyHash = (prefix: string, keyId: string) => `${prefix}spend:key:${keyId}`;
/** The key's tokens-per-minute counter of the minute holding `nowMs` (a fixed one-minute window). */
export const spendTokenRateKey = (prefix: string, keyId: string, nowMs: number) =>
  `${prefix}spend:tpm:${keyId}:${Math.floor(nowMs / 60_000)}`;
export const spendAccountHash = (prefix: string, accountId: string) => `${prefix}spend:acct:${accountId}`;
/**
 * A team's spend hash (issue 29): fields as a key's (period spend, holds). The account id is the
 * Redis Cluster hash tag (a team belongs to one account): same slot as the account's hashes.
 */
export const spendTeamHash = (prefix: string, accountId: string, teamId: string) =>
  `${prefix}spend:team:{${accountId}}:${teamId}`;
/** The team's tokens-per-minute counter of the minute holding `nowMs` (shared by its keys). */
export const spendTeamTokenRateKey = (prefix: string, accountId: string, teamId: string, nowMs: number) =>
  `${prefix}spend:tpm:team:{${accountId}}:${teamId}:${Math.floor(nowMs / 60_000)}`;
