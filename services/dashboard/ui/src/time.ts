/**
 * Display time zone: the viewer's own (the browser's) by default, or UTC; chosen in the navigation
 * and kept in localStorage. Only display changes: periods (today, this week, a key's limit period)
 * stay UTC and say so.
 */
const STORAGE = 'tollgate.tz';
export const BROWSER_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

let zone = readZone();
function readZone(): string {
  try {
    return localStorage.getItem(STORAGE) === 'UTC' ? 'UTC' : BROWSER_ZONE;
  } catch {
    return BROWSER_ZONE;
  }
}

export const displayZone = () => zone;

export function setDisplayZone(z: 'UTC' | 'local') {
  zone = z === 'UTC' ? 'UTC' : BROWSER_ZONE;
  try {
    localStorage.setItem(STORAGE, z === 'UTC' ? 'UTC' : 'local');
  } catch {
    // storage unavailable: the choice lasts this page
  }
}

const formats = new Map<string, Intl.DateTimeFormat>();
function parts(d: Date, withSeconds: boolean): Record<string, string> {
  const id = `${zone}|${withSeconds}`;
  let f = formats.get(id);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: withSeconds ? '2-digit' : undefined,
      hourCycle: 'h23',
      timeZoneName: 'short',
    });
    formats.set(id, f);
  }
  return Object.fromEntries(f.formatToParts(d).map((p) => [p.type, p.value]));
}

/** "2026-11-26 08:43:14 UTC" / "2026-11-26 09:43:14 GMT+1" in the display zone. */
export function when(iso: string | null | undefined): string {
  if (!iso) return 'never';
  const p = parts(new Date(iso), true);
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${p.timeZoneName}`;
}

/** "11-26 08:43 UTC": compact, for tables. */
export function whenShort(iso: string): string {
  const p = parts(new Date(iso), false);
  return `${p.month}-${p.day} ${p.hour}:${p.minute} ${p.timeZoneName}`;
}

/** A UTC calendar day ("2026-11-26") with its weekday: the day buckets are UTC days. */
export function utcDay(date: string): string {
  const d = new Date(`${date.slice(0, 10)}T00:00:00Z`);
  return `${d.toLocaleDateString('en-US', { weekday: 'short', timeZone: 'UTC' })} ${date.slice(0, 10)} (UTC)`;
}

/** `datetime-local` input value (display zone) → ISO instant. */
export function fromLocalInput(value: string): string | null {
  if (!value) return null;
  if (zone === 'UTC') return `${value}:00.000Z`;
  const d = new Date(value); // a datetime-local value without offset is the browser's zone
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

/** ISO instant → `datetime-local` input value in the display zone (`fromLocalInput`'s inverse); '' if not one. */
export function toLocalInput(iso: string | null): string {
  const ms = iso ? Date.parse(iso) : Number.NaN;
  if (Number.isNaN(ms)) return '';
  const p = parts(new Date(ms), false);
  return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}`;
}

export function ago(iso: string | null | undefined): string {
  if (!iso) return 'never';
  const s = Math.round((Date.now() - new Date(iso).getTime()) / 1000);
  if (s < 60) return `${Math.max(s, 0)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}
