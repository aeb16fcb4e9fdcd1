export * from './connection';
export * from './consumer';
export * from './dead-letters';
export type { EventsLogFn, EventsLogger } from './logger';
export * from './partition';
export * from './publisher';
export * from './signature';
export * from './topology';
export * from './usage-event';
