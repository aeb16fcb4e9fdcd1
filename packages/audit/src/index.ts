export * from './timeline';
