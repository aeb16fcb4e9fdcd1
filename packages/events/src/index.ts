export * from './connection';
export * from './consumer';
export * from './dead-letters';
export type { EventsLogFn, EventsLogger } from './logger';
export * from './publisher';
export * from './topology';
export * from './usage-event';
export * from './signature';
