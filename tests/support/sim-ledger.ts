/**
 * The provider simulator's charge ledger (GET /sim/ledger, services/provider-sim
 * src/completion/ledger.ts): what it charged per request, priced with a catalog model — what a
 * provider would have invoiced the gateway for it.
 */
import { type CatalogModel, computeCost } from '@tollgate/catalog';
import type { SimCharge } from '@tollgate/provider-sim';

export type { SimCharge };

/** The simulator's charges (of `tag` when given), oldest first. */
export async function simLedger(simUrl: string, tag?: string): Promise<SimCharge[]> {
  const res = await fetch(
    `${simUrl}/sim/ledger${tag === undefined ? '' : `?tag=${encodeURIComponent(tag)}`}`,
  );
  if (!res.ok) throw new Error(`GET /sim/ledger: HTTP ${res.status}`);
  return ((await res.json()) as { data: SimCharge[] }).data;
}

/** What a charge costs at `model`'s prices, in @tollgate/money units. */
export const chargeUnits = (model: CatalogModel, c: SimCharge): bigint =>
  computeCost(model, {
    prompt: c.prompt,
    completion: c.completion,
    cached: c.cached,
    cacheWrite: c.cache_write,
    cacheWrite1h: c.cache_write_1h,
    reasoning: c.reasoning,
  });
