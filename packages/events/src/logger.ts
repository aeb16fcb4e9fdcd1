/**
 * The logging surface this package uses. A pino `Logger` (from @tollgate/logger) fits; tests pass a
 * recorder.
 */
export interface EventsLogFn {
  (obj: object, msg?: string): void;
  (msg: string): void;
}

export interface EventsLogger {
  debug: EventsLogFn;
  info: EventsLogFn;
  warn: EventsLogFn;
  error: EventsLogFn;
  child(bindings: Record<string, unknown>): EventsLogger;
}
