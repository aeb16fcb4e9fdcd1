import { commonEnv, envBoolean, envPort, loadConfig as parseEnv } from '@tollgate/config';
import { z } from 'zod';

const delayMs = z.coerce.number().int().min(0).max(600_000).default(0);

const emptyToUndefined = (v: unknown) => (v === '' ? undefined : v);

export const configSchema = z.object({
  ...commonEnv,
  PORT: envPort(8090),
  HOST: z.string().min(1).default('0.0.0.0'),
  /** Default delay before the first token of every response (ms). Per request: `sim.ttft_ms`. */
  SIM_TTFT_MS: delayMs,
  /** Default delay between two tokens (ms). Per request: `sim.inter_token_ms`. */
  SIM_INTER_TOKEN_MS: delayMs,
  /** When set, every /v1 request must carry `Authorization: Bearer <SIM_API_KEY>`. */
  SIM_API_KEY: z.preprocess(emptyToUndefined, z.string().min(1).optional()),
  /** `true`: unknown chat-completion arguments get OpenAI's 400 "Unrecognized request argument supplied". */
  SIM_STRICT: envBoolean(false),
  /** Comma-separated model ids listed by GET /v1/models (any model id is accepted by completions). */
  SIM_MODELS: z.preprocess(
    emptyToUndefined,
    z
      .string()
      .optional()
      .transform((v) =>
        v
          ?.split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      ),
  ),
});

export type Config = z.output<typeof configSchema>;

export const loadConfig = (env: NodeJS.ProcessEnv = process.env): Config => parseEnv(configSchema, env);
