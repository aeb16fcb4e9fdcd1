export { type KeysConfig, keysConfigSchema, loadConfig } from './config';
export type { CallerKeyObject, KeyObject } from './keys/key-view';
export { type KeysServiceHandle, startKeysService } from './service';
export { billingUsageReader, type KeyUsage, type UsageReader, zeroUsageReader } from './usage/usage-reader';
