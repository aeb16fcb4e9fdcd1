import type { AuditEntry, AuditSource } from '@tollgate/contracts';
import { describe, expect, it } from 'vitest';
import { timelinePage } from './timeline';

const entry = (id: number, at: string): AuditEntry => ({
  id: String(id),
  at,
  actor: { kind: 'admin_cli', id: null },
  client_address: null,
  action: 'x',
  target: { kind: 'k', id: String(id) },
  before: null,
  after: null,
});

/** Three logs, each newest first by id, their times interleaved (ties between logs included). */
const logs: Record<AuditSource, AuditEntry[]> = {
  keys: [
    entry(9, '2026-01-01T00:00:09Z'),
    entry(5, '2026-01-01T00:00:05Z'),
    entry(2, '2026-01-01T00:00:02Z'),
  ],
  billing: [entry(7, '2026-01-01T00:00:05Z'), entry(3, '2026-01-01T00:00:01Z')],
  dashboard: [entry(4, '2026-01-01T00:00:08Z'), entry(1, '2026-01-01T00:00:03Z')],
};

/** A log's page as its owner answers it: entries below `before`, at most `limit`. */
async function read(source: AuditSource, f: Record<string, string>) {
  const below = logs[source].filter((e) => f.before === undefined || Number(e.id) < Number(f.before));
  const data = below.slice(0, Number(f.limit));
  return { data, next_before: data.length === Number(f.limit) ? (data.at(-1)?.id ?? null) : null };
}

describe('timelinePage', () => {
  it('merges the logs newest first and pages without loss or repeat, at any page size', async () => {
    const all = await timelinePage(read, { limit: '500' });
    expect(all.next_before).toBeNull();
    expect(all.data.map((e) => `${e.source}:${e.id}`)).toEqual([
      'keys:9',
      'dashboard:4',
      'billing:7', // same instant as keys:5: the larger id first
      'keys:5',
      'dashboard:1',
      'keys:2',
      'billing:3',
    ]);
    for (const limit of [1, 2, 3]) {
      const seen: string[] = [];
      let before: string | null = null;
      do {
        const page: Awaited<ReturnType<typeof timelinePage>> = await timelinePage(read, {
          limit: String(limit),
          ...(before ? { before } : {}),
        });
        expect(page.data.length).toBeLessThanOrEqual(limit);
        seen.push(...page.data.map((e) => `${e.source}:${e.id}`));
        before = page.next_before;
      } while (before);
      expect(seen).toEqual(all.data.map((e) => `${e.source}:${e.id}`));
    }
  });

  it('refuses a cursor it did not make and a limit out of range with 400', async () => {
    for (const before of ['12', 'keys:x', 'audit:1', 'keys:1,billing', 'keys:01'])
      await expect(timelinePage(read, { before })).rejects.toMatchObject({ status: 400 });
    for (const limit of ['0', '501', '1.5', 'ten'])
      await expect(timelinePage(read, { limit })).rejects.toMatchObject({ status: 400 });
  });
});
