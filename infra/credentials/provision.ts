/**
 * Creates each service's own login on Postgres, Redis and RabbitMQ (issue 23, "One credential per
 * service"), as infra/credentials/policy.mjs says, using the servers' administrative logins:
 * a Postgres superuser URL, a Redis user allowed ACL SETUSER, and `rabbitmqctl` on the broker's host.
 * Idempotent (a second run sets the same passwords and rules again). Tests create logins with
 * unique names for their run and drop them afterwards; nothing here touches an existing user.
 */
import { execFileSync } from 'node:child_process';
import { Redis } from 'ioredis';
import pg from 'pg';
import { rabbitmqPermissions, redisAclRules } from './policy.mjs';

export interface Login {
  user: string;
  password: string;
}

/** `url` with this login's user and password. */
export function withLogin(url: string, login: Login): string {
  const u = new URL(url);
  u.username = encodeURIComponent(login.user);
  u.password = encodeURIComponent(login.password);
  return u.toString();
}

const ident = (s: string) => `"${s.replaceAll('"', '""')}"`;
const literal = (s: string) => `'${s.replaceAll("'", "''")}'`;

/**
 * In the database of `adminUrl` (a superuser's): a LOGIN role per service, owning its own schema
 * (created if missing; tables already there are handed over), nothing granted on any other schema,
 * and no CREATE on the public schema. The service's migrations then run as that role.
 */
export async function provisionPostgres(
  adminUrl: string,
  roles: Partial<Record<'keys' | 'billing' | 'dashboard', Login>>,
): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const database =
      (await client.query<{ db: string }>('select current_database() as db')).rows[0]?.db ?? '';
    await client.query('revoke create on schema public from public');
    for (const [schema, login] of Object.entries(roles)) {
      if (!login) continue;
      const role = ident(login.user);
      await client.query(`do $$ begin
        if not exists (select from pg_roles where rolname = ${literal(login.user)}) then
          create role ${role} login;
        end if;
      end $$`);
      await client.query(
        `alter role ${role} with login nosuperuser nocreatedb nocreaterole password ${literal(login.password)}`,
      );
      await client.query(`grant connect on database ${ident(database)} to ${role}`);
      await client.query(`create schema if not exists ${ident(schema)} authorization ${role}`);
      await client.query(`alter schema ${ident(schema)} owner to ${role}`);
      await client.query(`revoke all on schema ${ident(schema)} from public`);
      // A database migrated before the roles existed: its tables, sequences and types change hands.
      await client.query(`do $$ declare r record; begin
        for r in select c.relname, c.relkind from pg_class c join pg_namespace n on n.oid = c.relnamespace
                 where n.nspname = ${literal(schema)} and c.relkind in ('r', 'p', 'S', 'v', 'm')
                   -- a serial/identity column's sequence follows its table's owner (and refuses its own)
                   and not (c.relkind = 'S' and exists (select from pg_depend d
                     where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype in ('a', 'i'))) loop
          execute format(case when r.relkind = 'S' then 'alter sequence %I.%I owner to %I'
                              when r.relkind = 'v' then 'alter view %I.%I owner to %I'
                              when r.relkind = 'm' then 'alter materialized view %I.%I owner to %I'
                              else 'alter table %I.%I owner to %I' end,
                         ${literal(schema)}, r.relname, ${literal(login.user)});
        end loop;
      end $$`);
    }
  } finally {
    await client.end();
  }
}

/** Drops roles made by provisionPostgres once their databases are gone (tests). */
export async function dropPostgresRoles(adminUrl: string, users: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    for (const user of users) await client.query(`drop role if exists ${ident(user)}`);
  } finally {
    await client.end();
  }
}

/**
 * The nodes `adminUrl` names: itself, or for a `redis+cluster://` (`rediss+cluster://`) URL every node
 * of that cluster, masters and replicas (`CLUSTER NODES` of the seed). ACL users are per node on a
 * Redis Cluster (they are not replicated), and a replica serves its master's slots after a failover.
 */
async function redisNodeUrls(adminUrl: string): Promise<string[]> {
  const url = new URL(adminUrl);
  if (!url.protocol.endsWith('+cluster:')) return [adminUrl];
  url.protocol = url.protocol.replace('+cluster', '');
  const seed = new Redis(url.toString(), { lazyConnect: true, maxRetriesPerRequest: 1 });
  await seed.connect();
  try {
    const nodes = String(await seed.call('CLUSTER', 'NODES'));
    return nodes
      .split('\n')
      .map((line) => line.split(' '))
      .filter((f) => f.length > 2 && !/fail|noaddr|handshake/.test(f[2] ?? ''))
      .map((f) => {
        const address = (f[1] ?? '').split('@')[0] ?? '';
        const node = new URL(url.toString());
        const colon = address.lastIndexOf(':');
        node.hostname = address.slice(0, colon) || url.hostname;
        node.port = address.slice(colon + 1);
        return node.toString();
      });
  } finally {
    seed.disconnect();
  }
}

/** Runs `command` (arguments) on every node of `adminUrl` (one node, or every node of a cluster). */
async function onEveryRedisNode(adminUrl: string, commands: string[][]): Promise<void> {
  for (const nodeUrl of await redisNodeUrls(adminUrl)) {
    const redis = new Redis(nodeUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    try {
      for (const [name, ...args] of commands) await redis.call(name as string, ...args);
    } finally {
      redis.disconnect();
    }
  }
}

/**
 * An ACL user per service, limited to its key patterns under `prefix` (policy.mjs), on the Redis of
 * `adminUrl`: one node, or every node of a cluster (`redis+cluster://…`).
 */
export async function provisionRedis(
  adminUrl: string,
  prefix: string,
  users: Partial<Record<'proxy' | 'keys' | 'billing', Login>>,
): Promise<void> {
  const rules = redisAclRules(prefix) as Record<string, string[]>;
  const commands = Object.entries(users).flatMap(([service, login]) =>
    login
      ? [['ACL', 'SETUSER', login.user, 'reset', 'on', `>${login.password}`, ...(rules[service] ?? [])]]
      : [],
  );
  await onEveryRedisNode(adminUrl, commands);
}

export async function dropRedisUsers(adminUrl: string, users: string[]): Promise<void> {
  if (users.length > 0) await onEveryRedisNode(adminUrl, [['ACL', 'DELUSER', ...users]]);
}

/**
 * `rabbitmqctl` reaches the broker over Erlang distribution; on a loaded host a call can fail to
 * connect or time out although the broker is up, so a failed call is tried again (3 attempts).
 * Every command used here is idempotent or guarded by the caller (`list_users` before `add_user`).
 * `--` ends the options: a password may start with '-' (base64url), which rabbitmqctl would read as a flag.
 */
function rabbitmqctl(...args: string[]): string {
  const command = process.env.RABBITMQCTL ?? 'rabbitmqctl';
  for (let attempt = 1; ; attempt++) {
    try {
      return execFileSync(command, args, { encoding: 'utf8', stdio: 'pipe', timeout: 60_000 });
    } catch (error) {
      if (attempt >= 3) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000 * attempt);
    }
  }
}

/**
 * A RabbitMQ user per service with its permissions on `vhost` for the names of `prefix` (policy.mjs),
 * through `rabbitmqctl` on the broker's host (compose and Kubernetes: docs/operations.md "Security").
 */
export function provisionRabbitmq(
  prefix: string,
  users: Partial<Record<'proxy' | 'billing', Login>>,
  vhost = '/',
): void {
  const permissions = rabbitmqPermissions(prefix) as Record<
    string,
    { configure: string; write: string; read: string }
  >;
  const existing = new Set(
    rabbitmqctl('list_users', '--quiet', '--no-table-headers')
      .split('\n')
      .map((l) => l.split('\t')[0]),
  );
  for (const [service, login] of Object.entries(users)) {
    const p = permissions[service];
    if (!login || !p) continue;
    if (existing.has(login.user)) rabbitmqctl('change_password', '--', login.user, login.password);
    else {
      try {
        rabbitmqctl('add_user', '--', login.user, login.password);
      } catch {
        // a retried add_user whose first try did land: the user exists, so set its password
        rabbitmqctl('change_password', '--', login.user, login.password);
      }
    }
    rabbitmqctl('set_permissions', '-p', vhost, login.user, p.configure, p.write, p.read);
  }
}

export function dropRabbitmqUsers(users: string[]): void {
  for (const user of users) {
    try {
      rabbitmqctl('delete_user', user);
    } catch {
      // already gone
    }
  }
}
