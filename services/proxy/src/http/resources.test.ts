import { createLogger } from '@tollgate/logger';
import { CorkedRedis } from '@tollgate/redis';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config';
import { connectRedis } from './resources';

const logger = createLogger({ name: 'resources-test', level: 'silent' });

describe('connectRedis', () => {
  it('a single node: one connection that batches a turn’s commands into one write (not auto-pipelined)', async () => {
    const config = loadConfig({ REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
    const redis = await connectRedis(config, logger);
    try {
      // The admission and the settles riding with it leave in one write (bench/README.md "JSON request CPU").
      expect(redis).toBeInstanceOf(CorkedRedis);
      expect(redis.options.enableAutoPipelining).toBe(false);
      expect(await redis.ping()).toBe('PONG');
    } finally {
      redis.disconnect();
    }
  });
});
