export * from './consumer';
export type { EventsLogFn, EventsLogger } from './logger';
export * from './publisher';
export * from './topology';
export * from './usage-event';
