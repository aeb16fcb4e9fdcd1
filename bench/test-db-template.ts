/**
 * What the migrated template database saves `make test`: the setup of the test harnesses that create
 * a database, with and without the template (tests/support/template-db.ts), interleaved.
 *
 *   pnpm exec tsx bench/test-db-template.ts [--rounds 6]
 *
 * Timed per round and mode: a database ready for all three services (create + migrate keys, billing
 * and dashboard, vs. copy the template), `startTestKeysService()` + close, `startTestBilling()` +
 * cleanup. Prints the median of each in ms. Run it on a quiet machine: it measures wall time.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { startTestBilling } from '@tollgate/billing/testing';
import { startTestKeysService } from '@tollgate/keys/testing';
import { createTestDatabase, TEMPLATE_DB_ENV } from '@tollgate/testkit';
import { createBillingDb, migrateBillingDb } from '../services/billing/src/database';
import { createDashboardDb, migrateDashboardDb } from '../services/dashboard/src/database';
import { createKeysDb, migrateKeysDb } from '../services/keys/src/database';
import { buildTemplateDatabase } from '../tests/support/template-db';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '6' } } });
const rounds = Number(values.rounds);
process.env.TOLLGATE_TEST_RUN = `bench${randomBytes(3).toString('hex')}`;
process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/postgres';

async function migrateAll(url: string) {
  const k = createKeysDb(url, { max: 1 });
  await migrateKeysDb(k).finally(() => k.destroy());
  const b = createBillingDb(url, { max: 1 });
  await migrateBillingDb(b).finally(() => b.destroy());
  const d = createDashboardDb(url, { max: 1 });
  await migrateDashboardDb(d).finally(() => d.destroy());
}

const steps: Record<string, () => Promise<void>> = {
  'database for the whole stack (create/copy + migrate)': async () => {
    const db = await createTestDatabase({ migrated: true });
    await migrateAll(db.url);
    await db.drop();
  },
  'startTestKeysService() + close': async () => {
    const keys = await startTestKeysService();
    await keys.close();
  },
  'startTestBilling() + cleanup': async () => {
    const billing = await startTestBilling();
    await billing.cleanup();
  },
};

const template = await buildTemplateDatabase();
const times: Record<string, Record<'without' | 'with', number[]>> = {};
for (let r = 0; r < rounds; r++) {
  for (const mode of r % 2 === 0 ? (['without', 'with'] as const) : (['with', 'without'] as const)) {
    if (mode === 'with') process.env[TEMPLATE_DB_ENV] = template.name;
    else delete process.env[TEMPLATE_DB_ENV];
    for (const [name, step] of Object.entries(steps)) {
      const t0 = performance.now();
      await step();
      const entry = times[name] ?? { without: [], with: [] };
      entry[mode].push(performance.now() - t0);
      times[name] = entry;
    }
  }
}
await template.drop();

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
};
console.log(`median of ${rounds} rounds, ms (without template → with template)`);
for (const [name, t] of Object.entries(times)) {
  console.log(`  ${name}: ${median(t.without).toFixed(0)} → ${median(t.with).toFixed(0)}`);
}
