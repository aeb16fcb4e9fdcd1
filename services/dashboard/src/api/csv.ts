/** A whole cell that is a plain decimal number (a spreadsheet reads it as a number, never a formula). */
const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;

/**
 * A CSV cell: quoted, quotes doubled, and a cell starting with = + - @ tab or CR prefixed with `'`
 * (spreadsheet formula injection) unless the WHOLE cell is a number: `-1+HYPERLINK(…)` starts with a
 * minus and a digit and is still a formula.
 */
export const csvCell = (v: unknown) => {
  let s = v === null || v === undefined ? '' : String(v);
  if (/^[=+\-@\t\r]/.test(s) && !NUMBER.test(s)) s = `'${s}`;
  return `"${s.replaceAll('"', '""')}"`;
};
