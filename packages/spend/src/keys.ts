/** Redis key of a key's spend hash and of an account's hash. Everything lives under the prefix. */
export const spendKeyHash = (prefix: string, keyId: string) => `${prefix}spend:key:${keyId}`;
/** The key's tokens-per-minute counter of the minute holding `nowMs` (a fixed one-minute window). */
export const spendTokenRateKey = (prefix: string, keyId: string, nowMs: number) =>
  `${prefix}spend:tpm:${keyId}:${Math.floor(nowMs / 60_000)}`;
export const spendAccountHash = (prefix: string, accountId: string) => `${prefix}spend:acct:${accountId}`;
