import { accountParams } from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';
import { parseInput } from '@tollgate/http';
import { toDecimal, toUnits } from '@tollgate/money';
import type { Request } from 'express';

/** `:accountId` of an internal account route. */
export const accountIdOf = (req: Request): string => parseInput(accountParams, req.params).accountId;

/** Query strings arrive as string | string[] | object: a repeated parameter is a 400, not a crash. */
export function singleQuery(req: Request): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(req.query)) {
    if (typeof v !== 'string') throw badRequest(`${k}: must be given once, as a plain value`);
    out[k] = v;
  }
  return out;
}

/** A `numeric` sum from Postgres as a plain decimal string ("0.000150"→"0.00015"). */
export const decimalOf = (numeric: string | null | undefined): string => toDecimal(toUnits(numeric ?? '0'));
