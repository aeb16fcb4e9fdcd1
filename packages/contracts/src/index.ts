export * from './audit';
export * from './billing';
export * from './common';
export * from './dashboard';
export * from './ids';
export * from './keys';
export * from './teams';
export * from './webhooks';
