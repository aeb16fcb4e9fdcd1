/** A tiny line of daily values (no axes): the shape of a key's traffic at a glance. */
export function Sparkline(props: { values: number[]; label: string; color?: string }) {
  const w = 72;
  const h = 20;
  const max = Math.max(...props.values, 0);
  const step = props.values.length > 1 ? w / (props.values.length - 1) : w;
  const points = props.values
    .map((v, i) => `${(i * step).toFixed(1)},${(h - 1 - (max > 0 ? (v / max) * (h - 2) : 0)).toFixed(1)}`)
    .join(' ');
  return (
    <svg
      className="sparkline"
      width={w}
      height={h}
      viewBox={`0 0 ${w} ${h}`}
      role="img"
      aria-label={props.label}
    >
      <title>{props.label}</title>
      <polyline points={points} fill="none" stroke={props.color ?? '#1d4ed8'} strokeWidth="1.5" />
    </svg>
  );
}
