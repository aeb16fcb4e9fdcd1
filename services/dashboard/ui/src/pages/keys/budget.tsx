import { type LimitReset, periodEnd } from '@tollgate/money';
import type { Key } from '../../api';
import { usd } from '../../format';
import { when } from '../../time';

const PERIOD: Record<LimitReset, string> = {
  daily: 'today (UTC)',
  weekly: 'this week (UTC, from Monday)',
  monthly: 'this month (UTC)',
};

/** What a spend bar shows: a key's or a team's spend, limit and period. */
export interface BudgetFigures {
  scope?: Key['scope'];
  usage: number;
  limit: number | null;
  limit_reset: LimitReset | null;
  limit_remaining?: number | null;
}

const periodLabel = (k: BudgetFigures) => (k.limit_reset ? PERIOD[k.limit_reset] : 'in total');

const expired = (k: Key) => k.expires_at !== null && new Date(k.expires_at).getTime() <= Date.now();

/** A key at or over its spend limit: requests are refused until the period resets (or the limit rises). */
const limitReached = (k: Key) =>
  k.scope === 'inference' && k.limit !== null && (k.limit_remaining ?? k.limit - k.usage) <= 0;

export const stateOf = (k: Key) =>
  k.revoked
    ? 'revoked'
    : k.disabled
      ? 'disabled'
      : expired(k)
        ? 'expired'
        : limitReached(k)
          ? 'limit reached'
          : 'active';

/** Spend against the limit in the key's (or team's) period: a bar, what remains and when the period resets. */
export function Budget(props: { k: BudgetFigures }) {
  const { k } = props;
  if (k.scope === 'management') return <span className="muted">no spend</span>;
  if (k.limit === null) {
    return (
      <div className="budget">
        <div>
          {usd(k.usage)} <span className="muted">{periodLabel(k)}</span>
        </div>
        <div className="muted small">no limit</div>
      </div>
    );
  }
  const remaining = Math.max(0, k.limit_remaining ?? k.limit - k.usage);
  const share = k.limit > 0 ? Math.min(1, k.usage / k.limit) : 1;
  const reset = k.limit_reset ? periodEnd(k.limit_reset, new Date()) : null;
  const level = share >= 1 ? 'full' : share >= 0.8 ? 'high' : 'ok';
  return (
    <div className="budget">
      <div>
        {usd(k.usage)}{' '}
        <span className="muted">
          of {usd(k.limit)} {periodLabel(k)}
        </span>
      </div>
      {/* The figures around it say the same in words. */}
      <div className={`bar bar-${level}`} aria-hidden="true">
        <div style={{ width: `${(share * 100).toFixed(1)}%` }} />
      </div>
      <div className="small">
        <span data-testid="remaining">{usd(remaining)} left</span>
        <span className="muted">{reset ? ` · resets ${when(reset.toISOString())}` : ' · never resets'}</span>
      </div>
    </div>
  );
}
