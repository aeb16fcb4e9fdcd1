/**
 * vitest global setup (after @tollgate/testkit's): one database per run with every service's schema
 * at the latest migration, named in TOLLGATE_TEST_TEMPLATE_DB. The test harnesses copy it
 * (`createTestDatabase({ migrated: true })`) instead of migrating a fresh database in every test
 * file. testkit's teardown drops it with the run's other databases. TOLLGATE_TEST_TEMPLATE=0 turns
 * it off (every harness database is then migrated by the services, as before).
 */
import { createTestDatabase, TEMPLATE_DB_ENV, type TestDatabase } from '@tollgate/testkit';
import { createBillingDb, migrateBillingDb } from '../../services/billing/src/database';
import { createDashboardDb, migrateDashboardDb } from '../../services/dashboard/src/database';
import { createKeysDb, migrateKeysDb } from '../../services/keys/src/database';

/** A new database (of the current run) with the keys, billing and dashboard schemas migrated. */
export async function buildTemplateDatabase(): Promise<TestDatabase> {
  const template = await createTestDatabase();
  const migrations: Array<() => Promise<void>> = [
    async () => {
      const db = createKeysDb(template.url, { max: 1 });
      await migrateKeysDb(db).finally(() => db.destroy());
    },
    async () => {
      const db = createBillingDb(template.url, { max: 1 });
      await migrateBillingDb(db).finally(() => db.destroy());
    },
    async () => {
      const db = createDashboardDb(template.url, { max: 1 });
      await migrateDashboardDb(db).finally(() => db.destroy());
    },
  ];
  for (const migrate of migrations) await migrate();
  return template;
}

export default async function setup() {
  if (process.env.TOLLGATE_TEST_TEMPLATE === '0') return;
  process.env[TEMPLATE_DB_ENV] = (await buildTemplateDatabase()).name;
}
