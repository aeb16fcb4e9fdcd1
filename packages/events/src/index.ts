export * from './topology';
export * from './usage-event';
