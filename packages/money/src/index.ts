/**
 * Exact money. Amounts are bigint counts of "units" of 1e-10 USD. Prices and costs cross process
 * boundaries as decimal strings ("0.0000025"), never as binary floats; Postgres stores `numeric`.
 * 1e-10 keeps every catalog price of up to 10 decimal places exact and lets an int64 Redis counter
 * hold up to ~922 million USD.
 */
export const SCALE = 10;
const FACTOR = 10n ** BigInt(SCALE);
const DECIMAL = /^(-)?(\d+)(?:\.(\d+))?$/;

export class MoneyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MoneyError';
  }
}

/** Parses a decimal string or a finite number (via its shortest decimal text) into units. Throws MoneyError. */
export function toUnits(value: string | number): bigint {
  const text = typeof value === 'number' ? numberToPlainString(value) : value.trim();
  const m = DECIMAL.exec(text);
  if (!m) throw new MoneyError(`not a decimal amount: "${text}"`);
  const [, sign, int, frac = ''] = m;
  if (frac.length > SCALE) {
    const extra = frac.slice(SCALE);
    if (/[^0]/.test(extra)) throw new MoneyError(`more than ${SCALE} decimal places: "${text}"`);
  }
  const units = BigInt(int!) * FACTOR + BigInt(frac.slice(0, SCALE).padEnd(SCALE, '0') || '0');
  return sign ? -units : units;
}

/** Units to a plain decimal string without trailing zeros: 25000n -> "0.0000025". */
export function toDecimal(units: bigint): string {
  const neg = units < 0n;
  const abs = neg ? -units : units;
  const int = abs / FACTOR;
  const frac = (abs % FACTOR).toString().padStart(SCALE, '0').replace(/0+$/, '');
  return `${neg ? '-' : ''}${int}${frac ? `.${frac}` : ''}`;
}

/** Units to a JSON number. The decimal text round-trips for every amount below 2^53 units. */
export const toNumber = (units: bigint): number => Number(toDecimal(units));

function numberToPlainString(n: number): string {
  if (!Number.isFinite(n)) throw new MoneyError(`not a finite number: ${n}`);
  const s = String(n);
  if (!/e/i.test(s)) return s;
  // Expand exponent notation exactly (e.g. 2.5e-7 -> "0.00000025").
  const [mant = '', expText = '0'] = s.toLowerCase().split('e');
  const exp = Number(expText);
  const neg = mant.startsWith('-');
  const [i = '', f = ''] = mant.replace('-', '').split('.');
  const digits = i + f;
  const point = i.length + exp;
  let out: string;
  if (point <= 0) out = `0.${'0'.repeat(-point)}${digits}`;
  else if (point >= digits.length) out = digits + '0'.repeat(point - digits.length);
  else out = `${digits.slice(0, point)}.${digits.slice(point)}`;
  return (neg ? '-' : '') + out;
}

/** tokens × per-token price, exact. */
export const costOf = (tokens: number, pricePerTokenUnits: bigint): bigint =>
  BigInt(tokens) * pricePerTokenUnits;

export const maxUnits = (a: bigint, b: bigint) => (a > b ? a : b);
export const minUnits = (a: bigint, b: bigint) => (a < b ? a : b);

/** Spend periods are UTC calendar periods: day, ISO week (Monday), month; `null` = never resets. */
export const LIMIT_RESETS = ['daily', 'weekly', 'monthly'] as const;
export type LimitReset = (typeof LIMIT_RESETS)[number];

/** A stable id of the period containing `at`: "d2026-11-20", "w2026-W47", "m2026-11", or "all". */
export function periodKey(reset: LimitReset | null, at: Date): string {
  switch (reset) {
    case 'daily':
      return `d${at.toISOString().slice(0, 10)}`;
    case 'weekly': {
      const { year, week } = isoWeek(at);
      return `w${year}-W${String(week).padStart(2, '0')}`;
    }
    case 'monthly':
      return `m${at.toISOString().slice(0, 7)}`;
    case null:
      return 'all';
  }
}

/** First instant of the period containing `at` (UTC); epoch for `null`. */
export function periodStart(reset: LimitReset | null, at: Date): Date {
  const y = at.getUTCFullYear();
  const m = at.getUTCMonth();
  const d = at.getUTCDate();
  switch (reset) {
    case 'daily':
      return new Date(Date.UTC(y, m, d));
    case 'weekly': {
      const dow = (at.getUTCDay() + 6) % 7; // Monday = 0
      return new Date(Date.UTC(y, m, d - dow));
    }
    case 'monthly':
      return new Date(Date.UTC(y, m, 1));
    case null:
      return new Date(0);
  }
}

/** First instant of the next period (UTC); null when the period never ends. */
export function periodEnd(reset: LimitReset | null, at: Date): Date | null {
  const start = periodStart(reset, at);
  switch (reset) {
    case 'daily':
      return new Date(start.getTime() + 86_400_000);
    case 'weekly':
      return new Date(start.getTime() + 7 * 86_400_000);
    case 'monthly':
      return new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
    case null:
      return null;
  }
}

export function isoWeek(at: Date): { year: number; week: number } {
  const dow = (at.getUTCDay() + 6) % 7; // Monday = 0
  // The Thursday of this ISO week decides its year.
  const thursday = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() - dow + 3));
  const year = thursday.getUTCFullYear();
  const dayOfYear = Math.round((thursday.getTime() - Date.UTC(year, 0, 1)) / 86_400_000);
  return { year, week: Math.floor(dayOfYear / 7) + 1 };
}
