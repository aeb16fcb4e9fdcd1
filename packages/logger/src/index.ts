import { type DestinationStream, type Logger, type LoggerOptions, pino } from 'pino';

export type { Logger } from 'pino';

/** Paths pino blanks out wherever they appear: keys, authorization headers, tokens, passwords. */
export const redactPaths = [
  'authorization',
  'Authorization',
  'key',
  'apiKey',
  'api_key',
  'token',
  'password',
  'secret',
  '*.authorization',
  '*.Authorization',
  '*.key',
  '*.apiKey',
  '*.api_key',
  '*.token',
  '*.password',
  '*.secret',
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'headers.authorization',
  'headers["x-service-token"]',
  'req.headers["x-service-token"]',
];

export interface LoggerConfig {
  name: string;
  level?: string;
  pretty?: boolean;
  /** Where JSON lines go (default stdout); tests pass a stream to read a service's log lines. */
  destination?: DestinationStream;
}

/** Matches a Tollgate key or a bearer token anywhere in a free-text log message. */
const SECRET_IN_TEXT = /(sk-tg-v1-)[0-9a-f]{8,}|(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/g;

export function scrubSecrets(text: string): string {
  return text.replace(SECRET_IN_TEXT, (_m, keyPrefix?: string, bearer?: string) =>
    keyPrefix ? `${keyPrefix}[REDACTED]` : `${bearer ?? ''}[REDACTED]`,
  );
}

export function createLogger(config: LoggerConfig): Logger {
  const options: LoggerOptions = {
    name: config.name,
    level: config.level ?? 'info',
    redact: { paths: redactPaths, censor: '[REDACTED]' },
    hooks: {
      // A plaintext key must never reach a log line, even inside a message string.
      logMethod(args, method) {
        const scrubbed = args.map((a) => (typeof a === 'string' ? scrubSecrets(a) : a)) as typeof args;
        return method.apply(this, scrubbed);
      },
    },
  };
  if (config.pretty) {
    return pino({
      ...options,
      transport: { target: 'pino-pretty', options: { colorize: true, singleLine: true } },
    });
  }
  return config.destination ? pino(options, config.destination) : pino(options);
}
