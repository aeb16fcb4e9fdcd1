export * from './audit';
export * from './billing';
export * from './common';
export * from './dashboard';
export * from './keys';
export * from './refusals';
export * from './teams';
export * from './webhooks';
