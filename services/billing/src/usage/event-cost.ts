import { SCALE, toDecimal, toUnits } from '@tollgate/money';

/** An event's cost in units and as the normalised decimal recorded. */
export interface EventCost {
  units: bigint;
  decimal: string;
}

/** Cost in units; more than 10 decimals (never sent by the proxy) is rounded up, never down. */
export function costUnits(cost: string): bigint {
  const [int = '0', frac = ''] = cost.split('.');
  if (frac.length <= SCALE) return toUnits(cost);
  const kept = toUnits(`${int}.${frac.slice(0, SCALE)}`);
  return /[1-9]/.test(frac.slice(SCALE)) ? kept + 1n : kept;
}

/** Costs of one batch, each distinct decimal string parsed once. */
export function costMemo(): (cost: string) => EventCost {
  const memo = new Map<string, EventCost>();
  return (cost) => {
    let c = memo.get(cost);
    if (!c) {
      const units = costUnits(cost);
      c = { units, decimal: toDecimal(units) };
      memo.set(cost, c);
    }
    return c;
  };
}
