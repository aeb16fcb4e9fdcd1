export { countPromptTokens } from './completion/prompt-tokens';
export type { ProviderSim, ProviderSimOptions } from './http/app';
export { createProviderSimHandler, DEFAULT_MODELS, startProviderSim } from './http/app';
export { SIM_AWS_CREDENTIALS, type AwsCredentials } from './clouds/sigv4';
