export { type BillingConfig, billingConfigSchema, loadConfig } from './config';
export { type BillingHandle, type BillingOptions, startBilling } from './service';
