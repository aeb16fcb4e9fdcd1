import type { AppError } from '@tollgate/errors';
import type { LimitReset } from '@tollgate/money';
import type { SpendReservation } from './guard-types';
import { keyLimitExceeded, paymentRequired, teamLimitExceeded } from './refusals';
import type { Lease, SpendStore } from './store-types';

/** A reservation of this process whose lease is renewed while its request lives. */
export interface LiveLease extends Lease {
  reservation: SpendReservation;
  limitReset: LimitReset | null;
  /** The team's reset period (issue 29), for its refusal. */
  teamLimitReset?: LimitReset | null;
}

export interface LeaseRenewer {
  /** Starts renewing a reservation's lease (and the timer, when it is the first one). */
  track(lease: LiveLease): void;
  /** Stops renewing it (settle): from now on no renewal can hold it again. */
  release(requestId: string): void;
  /** One renewal of every live lease now (what the timer runs every `leaseRenewMs`). */
  renew(): Promise<void>;
  /**
   * A renewal that starts after this call, before a rebuild: one sent earlier may have reached Redis
   * before it lost its data. Concurrent callers share: at most one renewal in flight and one queued
   * behind it for everyone who came while it ran (a process with thousands of streams must not renew
   * them once per key it rebuilds).
   */
  renewBeforeRebuild(): Promise<void>;
  /** How many leases are live. */
  readonly size: number;
}

/**
 * The live reservations of this process, by request id. Their leases are renewed together, one script
 * call every `leaseRenewMs`, while any exist (no timer runs when the process is idle); a reservation
 * leaves the set the moment settle is called, before the settle script is sent, so a renewal can
 * never resurrect a settled hold (both go over the same connection, in order). A lease that lapsed and
 * no longer fits once held again (its key or account went over the limit meanwhile) is dropped and
 * its reservation's `onLost` is called with the refusal.
 */
export function createLeaseRenewer(options: {
  store: Pick<SpendStore, 'renew'>;
  clock: () => Date;
  leaseRenewMs: number;
  onBackgroundError?: (err: unknown) => void;
}): LeaseRenewer {
  const live = new Map<string, LiveLease>();
  let timer: NodeJS.Timeout | null = null;

  const lost = (l: LiveLease, team: boolean): AppError =>
    team && l.team
      ? teamLimitExceeded(l.teamLimitReset ?? null, l.team.teamId)
      : l.keyTracked && l.limitUnits !== null && l.limitUnits !== undefined
        ? keyLimitExceeded(l.limitReset)
        : paymentRequired();

  const renew = (): Promise<void> => {
    if (live.size === 0) {
      if (timer) clearInterval(timer);
      timer = null;
      return Promise.resolve();
    }
    return options.store
      .renew(options.clock().getTime(), live.values())
      .then(({ overLimit, overTeam }) => {
        for (const lease of overLimit) {
          const l = live.get(lease.requestId);
          if (!l) continue; // settled meanwhile
          live.delete(lease.requestId);
          l.reservation.onLost?.(lost(l, overTeam?.has(lease) ?? false));
        }
      })
      .catch((err: unknown) => options.onBackgroundError?.(err));
  };

  let renewing: Promise<void> | null = null;
  let queued: Promise<void> | null = null;
  const renewBeforeRebuild = (): Promise<void> => {
    if (!renewing) {
      renewing = renew().finally(() => {
        renewing = null;
      });
      return renewing;
    }
    queued ??= renewing.then(() => {
      queued = null;
      return renewBeforeRebuild();
    });
    return queued;
  };

  return {
    track(lease) {
      live.set(lease.requestId, lease);
      if (!timer) {
        timer = setInterval(() => void renew(), options.leaseRenewMs);
        timer.unref();
      }
    },
    release(requestId) {
      live.delete(requestId);
    },
    renew,
    renewBeforeRebuild,
    get size() {
      return live.size;
    },
  };
}
