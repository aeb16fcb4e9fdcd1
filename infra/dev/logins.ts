/**
 * `make dev`'s own logins: each service gets its own Postgres role, Redis ACL user and RabbitMQ user
 * on the local servers (infra/credentials; docs/operations.md "Security"), created here with the
 * servers' administrative logins the development defaults use (trusted `postgres`, Redis' default
 * user, `rabbitmqctl`). Development passwords are fixed (local servers only; production refuses
 * none of them being set, see the production check). A server where that is not possible (e.g.
 * RabbitMQ in Docker: no local `rabbitmqctl`) keeps the shared development login, and says so.
 */
import {
  type Login,
  provisionPostgres,
  provisionRabbitmq,
  provisionRedis,
  withLogin,
} from '../credentials/provision';

type Service = 'proxy' | 'keys' | 'billing' | 'dashboard';
const pgLogin = (service: string): Login => ({
  user: `tollgate_dev_${service}`,
  password: `dev-${service}-pg`,
});
const login = (service: string, server: string): Login => ({
  user: `tollgate-dev-${service}`,
  password: `dev-${service}-${server}`,
});

export async function devServiceLogins(
  env: {
    DATABASE_URL: string;
    REDIS_URL: string;
    AMQP_URL: string;
    REDIS_PREFIX: string;
    AMQP_PREFIX: string;
  },
  log: (line: string) => void,
): Promise<Record<Service, Record<string, string>>> {
  const out: Record<Service, Record<string, string>> = { proxy: {}, keys: {}, billing: {}, dashboard: {} };
  const attempt = async (server: string, run: () => Promise<void> | void) => {
    try {
      await run();
    } catch (err) {
      log(
        `${server}: could not create the services' own logins (${(err as Error).message.split('\n')[0]}); they share the development login`,
      );
    }
  };
  await attempt('PostgreSQL', async () => {
    const roles = { keys: pgLogin('keys'), billing: pgLogin('billing'), dashboard: pgLogin('dashboard') };
    await provisionPostgres(env.DATABASE_URL, roles);
    for (const [s, l] of Object.entries(roles))
      out[s as Service].DATABASE_URL = withLogin(env.DATABASE_URL, l);
  });
  await attempt('Redis', async () => {
    const users = {
      proxy: login('proxy', 'redis'),
      keys: login('keys', 'redis'),
      billing: login('billing', 'redis'),
    };
    await provisionRedis(env.REDIS_URL, env.REDIS_PREFIX, users);
    for (const [s, l] of Object.entries(users)) out[s as Service].REDIS_URL = withLogin(env.REDIS_URL, l);
  });
  await attempt('RabbitMQ', () => {
    const users = { proxy: login('proxy', 'amqp'), billing: login('billing', 'amqp') };
    provisionRabbitmq(env.AMQP_PREFIX, users);
    for (const [s, l] of Object.entries(users)) out[s as Service].AMQP_URL = withLogin(env.AMQP_URL, l);
  });
  return out;
}
