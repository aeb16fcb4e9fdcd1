import { Writable } from 'node:stream';
import { createTestDatabase } from '@tollgate/testkit';
import type { Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import { runMigrateCommand } from './migrate-command';

/** A destination that keeps each JSON log line the command writes. */
function lines() {
  const out: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l.trim()) out.push(JSON.parse(l));
      done();
    },
  });
  return { out, destination };
}

const migrations = {
  '0001_t': {
    up: async (db: Kysely<unknown>) => {
      await db.schema.createTable('probe_cmd.t').addColumn('id', 'integer').execute();
    },
  },
};

describe('runMigrateCommand', () => {
  it('applies the migrations once, logging JSON lines through the shared logger; then finds nothing to do', async () => {
    const test = await createTestDatabase();
    try {
      const config = { DATABASE_URL: test.url, LOG_LEVEL: 'info' };
      const first = lines();
      const cmd = { service: 'probe', schema: 'probe_cmd', migrations, config };
      expect(await runMigrateCommand({ ...cmd, destination: first.destination })).toBe(0);
      expect(first.out).toEqual([
        expect.objectContaining({ name: 'probe-migrate', applied: ['0001_t'], msg: 'migrations applied' }),
      ]);
      const again = lines();
      expect(await runMigrateCommand({ ...cmd, destination: again.destination })).toBe(0);
      expect(again.out).toEqual([
        expect.objectContaining({ applied: [], schema: 'probe_cmd', msg: 'schema already up to date' }),
      ]);
    } finally {
      await test.drop();
    }
  });

  it('exits 1 with the error logged when a migration fails', async () => {
    const test = await createTestDatabase();
    try {
      const broken = { '0001_bad': { up: async () => Promise.reject(new Error('boom')) } };
      const log = lines();
      const code = await runMigrateCommand({
        service: 'probe',
        schema: 'probe_bad',
        migrations: broken,
        config: { DATABASE_URL: test.url },
        destination: log.destination,
      });
      expect(code).toBe(1);
      expect(log.out).toEqual([expect.objectContaining({ level: 50, msg: 'migration failed' })]);
      expect(JSON.stringify(log.out[0]?.err)).toContain('boom');
    } finally {
      await test.drop();
    }
  });
});
