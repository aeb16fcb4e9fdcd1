export {
  createRedisSpendGuard,
  keyLimitExceeded,
  paymentRequired,
  type RedisSpendGuardOptions,
  type SpendGuard,
  type SpendReservation,
} from './guard';
export {
  type AccountState,
  type AdmitArgs,
  type AdmitOutcome,
  type CommittedAccount,
  type CommittedKey,
  createSpendStore,
  defaultTimings,
  type Lease,
  type SettleArgs,
  type SpendStore,
  type SpendTimings,
  spendAccountHash,
  spendKeyHash,
} from './store';
