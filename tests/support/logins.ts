/**
 * Each service's own server logins for a test stack (issue 23: a stack run as in production), made
 * with the project's provisioning (infra/credentials) under names unique to this stack, and dropped
 * with it. The servers' default users are not touched.
 */
import { randomBytes } from 'node:crypto';
import type { TestAmqp, TestRedis } from '@tollgate/testkit';
import {
  dropPostgresRoles,
  dropRabbitmqUsers,
  dropRedisUsers,
  type Login,
  provisionPostgres,
  provisionRabbitmq,
  provisionRedis,
  withLogin,
} from '../../infra/credentials/provision';

type Service = 'proxy' | 'keys' | 'billing' | 'dashboard';

export interface ServiceLogins {
  /** Per service: its DATABASE_URL / REDIS_URL / AMQP_URL with its own login. */
  urls: Record<Service, Record<string, string>>;
  drop(): Promise<void>;
}

export async function createServiceLogins(
  databaseUrl: string,
  redis: TestRedis,
  amqp: TestAmqp,
): Promise<ServiceLogins> {
  const tag = randomBytes(5).toString('hex');
  const login = (service: string, server: string): Login => ({
    user: `tgt_${tag}_${server}_${service}`,
    password: randomBytes(18).toString('base64url'),
  });
  const pg = {
    keys: login('keys', 'pg'),
    billing: login('billing', 'pg'),
    dashboard: login('dashboard', 'pg'),
  };
  const rd = {
    proxy: login('proxy', 'redis'),
    keys: login('keys', 'redis'),
    billing: login('billing', 'redis'),
  };
  const mq = { proxy: login('proxy', 'mq'), billing: login('billing', 'mq') };
  await provisionPostgres(databaseUrl, pg);
  await provisionRedis(redis.url, redis.prefix, rd);
  provisionRabbitmq(amqp.prefix, mq);
  const urls: ServiceLogins['urls'] = { proxy: {}, keys: {}, billing: {}, dashboard: {} };
  for (const [s, l] of Object.entries(pg)) urls[s as Service].DATABASE_URL = withLogin(databaseUrl, l);
  for (const [s, l] of Object.entries(rd)) urls[s as Service].REDIS_URL = withLogin(redis.url, l);
  for (const [s, l] of Object.entries(mq)) urls[s as Service].AMQP_URL = withLogin(amqp.url, l);
  return {
    urls,
    async drop() {
      // After the stack's database is dropped (roles own its schemas until then).
      const server = new URL(databaseUrl);
      server.pathname = '/postgres';
      await dropPostgresRoles(
        server.toString(),
        Object.values(pg).map((l) => l.user),
      ).catch(() => {});
      await dropRedisUsers(
        redis.url,
        Object.values(rd).map((l) => l.user),
      ).catch(() => {});
      dropRabbitmqUsers(Object.values(mq).map((l) => l.user));
    },
  };
}
