export { type AwsCredentials, SIM_AWS_CREDENTIALS } from './clouds/sigv4';
export type { Charge as SimCharge } from './completion/ledger';
export { countPromptTokens } from './completion/prompt-tokens';
export type { ProviderSim, ProviderSimOptions } from './http/app';
export { createProviderSimHandler, DEFAULT_MODELS, startProviderSim } from './http/app';
