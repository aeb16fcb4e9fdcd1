import { type GroupBy, type Metric, RANGES, type Range } from './usage-data';

export interface UsageView {
  range: Range;
  granularity: 'hour' | 'day';
  /** The custom range's first and last UTC day (`YYYY-MM-DD`, inclusive); read when range is custom. */
  fromDay: string;
  toDay: string;
  groupBy: GroupBy;
  metric: Metric;
}

/** What the page is showing: range, bucket size (days only past 31 days), grouping and measure. */
export function UsageControls(props: {
  view: UsageView;
  /** The window holds more than 31 days: daily buckets only. */
  daysOnly: boolean;
  /** Why the custom range is not one (shown beside its days), or null. */
  error: string | null;
  onChange: (view: UsageView) => void;
  /** A team viewer: the grouping is fixed to team. */
  fixedGroup?: boolean;
}) {
  const { view, onChange, daysOnly } = props;
  const set = (change: Partial<UsageView>) => onChange({ ...view, ...change });
  return (
    <fieldset className="card controls" aria-label="Usage controls">
      <label>
        Range
        <select value={view.range} onChange={(e) => set({ range: e.target.value as Range })}>
          {Object.keys(RANGES).map((r) => (
            <option key={r} value={r}>
              last {r} (UTC)
            </option>
          ))}
          <option value="custom">custom (UTC days)</option>
        </select>
      </label>
      {view.range === 'custom' ? (
        <>
          <label>
            From (UTC day)
            <input type="date" value={view.fromDay} onChange={(e) => set({ fromDay: e.target.value })} />
          </label>
          <label>
            To (UTC day, included)
            <input type="date" value={view.toDay} onChange={(e) => set({ toDay: e.target.value })} />
          </label>
          {props.error ? (
            <p className="error small" role="alert" data-testid="range-error">
              {props.error}
            </p>
          ) : null}
        </>
      ) : null}
      <label>
        By
        <select
          value={daysOnly ? 'day' : view.granularity}
          disabled={daysOnly}
          onChange={(e) => set({ granularity: e.target.value as 'hour' | 'day' })}
        >
          <option value="hour">hour</option>
          <option value="day">day</option>
        </select>
      </label>
      <label>
        Group by
        <select
          value={view.groupBy}
          onChange={(e) => set({ groupBy: e.target.value as GroupBy })}
          aria-label="Group by"
          disabled={props.fixedGroup}
        >
          <option value="none">nothing</option>
          <option value="model">model</option>
          <option value="app">app (X-Title)</option>
          <option value="key">key</option>
          <option value="team">team</option>
          <option value="provider">provider</option>
        </select>
      </label>
      <label>
        Show
        <select value={view.metric} onChange={(e) => set({ metric: e.target.value as Metric })}>
          <option value="cost">spend</option>
          <option value="requests">requests</option>
          <option value="tokens">tokens</option>
        </select>
      </label>
    </fieldset>
  );
}
