import { expect } from 'vitest';
import type { Figures } from './harness';

/**
 * A load with nothing lost, doubled, mispriced or unexplained: records and spend totals agree, no key
 * over its limit, the queues and the proxy's spool drained, more than `minServed` answers (default
 * 20), and every refusal a limit (402, 403, 429), never a 5xx — unless `allowRefused` (a scenario
 * whose outage is answered with 5xx: then only the books are checked).
 */
export function expectBilledOnce(
  f: Figures,
  options: { minServed?: number; allowRefused?: boolean } = {},
): void {
  expect(f.served).toBeGreaterThan(options.minServed ?? 20);
  expect(f.lost).toBe(0);
  expect(f.duplicated).toBe(0);
  expect(f.wrongCost).toBe(0);
  expect(f.unexplainedRecords).toBe(0);
  expect(f.sumMismatches).toBe(0);
  expect(f.overshot).toBe(0);
  expect(f.queue).toBe(0);
  expect(f.dlq).toBe(0);
  expect(f.spooled).toBe(0);
  if (options.allowRefused) return;
  // Any other refusal fails with its status, timing and body (which refusal it was).
  expect(f.unexpectedRefusals, 'refusals other than a limit (402, 403, 429)').toEqual([]);
  for (const status of Object.keys(f.refusedByStatus)) expect(['402', '403', '429']).toContain(status);
}
