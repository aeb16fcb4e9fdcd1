export { configEnv, loadConfig, type ProxyConfig } from './config';
export { createProxyApp, type ProxyDeps, type ProxyHandle, startProxy } from './http/app';
export { allowAllSpendGuard, type SpendGuard, type SpendReservation } from './spend/guard';
