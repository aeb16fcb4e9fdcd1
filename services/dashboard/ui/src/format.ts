/**
 * USD for display from an exact decimal string: at least cents, and enough decimals (up to 6, or 8
 * below a cent) that a balance of 99.999973 is not shown as 100.00.
 */
export function usd(value: string | number | null | undefined, fixedDigits?: number): string {
  if (value === null || value === undefined) return '—';
  const n = Number(value);
  if (n === 0 && fixedDigits === undefined) return '$0.00';
  const abs = Math.abs(n);
  const digits = fixedDigits ?? (abs >= 0.01 ? 6 : 8);
  return `${n < 0 ? '-' : ''}$${abs.toLocaleString('en-US', { minimumFractionDigits: fixedDigits ?? 2, maximumFractionDigits: digits })}`;
}

/** Decimals a USD value needs (2–8: cents at least, never rounding a figure away). */
function digitsOf(value: string | number): number {
  const s = typeof value === 'number' ? value.toFixed(8) : value;
  const frac = (s.split('.')[1] ?? '').replace(/0+$/, '');
  return Math.min(8, Math.max(2, frac.length));
}

/** One formatter for a column of USD values: every row shows the same number of decimals. */
export function usdColumn(values: ReadonlyArray<string | number>): (v: string | number) => string {
  const digits = values.reduce<number>((d, v) => Math.max(d, digitsOf(v)), 2);
  return (v) => usd(v, digits);
}

export const int = (n: number | null | undefined) =>
  n === null || n === undefined ? '—' : n.toLocaleString('en-US');

export const ms = (n: number | null | undefined) =>
  n === null || n === undefined ? '—' : `${n.toLocaleString('en-US')} ms`;

/** The gateway's overhead: ms to the µs (0.412 ms), whole ms from 100 ms up. */
export const overheadMs = (n: number | null | undefined) =>
  n === null || n === undefined ? '—' : n >= 100 ? ms(Math.round(n)) : `${n.toFixed(3)} ms`;

export const plural = (n: number, word: string) => `${int(n)} ${word}${n === 1 ? '' : 's'}`;

export { when } from './time';
