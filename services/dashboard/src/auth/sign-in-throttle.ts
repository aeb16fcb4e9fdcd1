import { AppError } from '@tollgate/errors';
import type { DashboardDb } from '../database';
import {
  blockedUntil,
  clearSubject,
  type ReserveRule,
  reserveAttempt,
  sweepAttempts,
  takeBackAttempt,
} from './sign-in-throttle.repository';

export interface SignInThrottleOptions {
  db: DashboardDb;
  clock: () => Date;
  /** Failures of one (email, address) per window before backoff; an address gets `addressFactor` × that. */
  maxFailures: number;
  windowMs: number;
  /** First backoff after `maxFailures` failures; doubles with each further failure, at most the window. */
  backoffBaseMs: number;
  addressFactor?: number;
}

/** An attempt counted as a failure until `succeeded` takes it back. */
export interface SignInAttempt {
  pair: string;
  address: string;
}

/**
 * Throttling of dashboard sign-ins (issue 23), keyed on the pair (email, client address) and on the
 * address alone, never on the email alone: a stranger's failures slow down that stranger's address
 * for that email, not the owner signing in from elsewhere (behind a load balancer the address is the
 * one TRUSTED_PROXIES resolves). Each attempt is counted as a failure before the password is checked
 * (parallel guesses see each other's counts) and a success takes it back. Past the free attempts a
 * subject backs off exponentially instead of being locked for a window: while in backoff an attempt is
 * refused with 429 and `retry_after_seconds`, and writes nothing (a refused attempt adds no row and
 * does not extend anything). Rows whose window and backoff are over are swept (at most once a minute).
 */
export class SignInThrottle {
  readonly #o: SignInThrottleOptions;
  readonly #addressFactor: number;
  #lastSweep = 0;

  constructor(options: SignInThrottleOptions) {
    this.#o = options;
    this.#addressFactor = options.addressFactor ?? 10;
  }

  /** Counts the attempt; throws 429 (counting nothing) while the pair or the address backs off. */
  async admit(email: string, address: string): Promise<SignInAttempt> {
    const { db } = this.#o;
    const now = this.#o.clock();
    await this.#sweep(now);
    const attempt = { pair: `pair:${address}|${email.trim().toLowerCase()}`, address: `ip:${address}` };
    const rule = (free: number): ReserveRule => ({
      now,
      since: new Date(now.getTime() - this.#o.windowMs),
      freeAttempts: free,
      backoffBaseMs: this.#o.backoffBaseMs,
      backoffMaxMs: this.#o.windowMs,
    });
    if (!(await reserveAttempt(db, attempt.address, rule(this.#addressLimit)))) {
      throw await this.#refusal(attempt.address, now);
    }
    if (!(await reserveAttempt(db, attempt.pair, rule(this.#o.maxFailures)))) {
      await takeBackAttempt(db, attempt.address, this.#addressLimit);
      throw await this.#refusal(attempt.pair, now);
    }
    return attempt;
  }

  /** The password was right: the pair starts over, the address gets its attempt back. */
  async succeeded(attempt: SignInAttempt): Promise<void> {
    await Promise.all([
      clearSubject(this.#o.db, attempt.pair),
      takeBackAttempt(this.#o.db, attempt.address, this.#addressLimit),
    ]);
  }

  get #addressLimit(): number {
    return this.#o.maxFailures * this.#addressFactor;
  }

  async #refusal(subject: string, now: Date): Promise<AppError> {
    const until = (await blockedUntil(this.#o.db, subject)) ?? new Date(now.getTime() + 1000);
    const retryAfter = Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
    return new AppError('rate_limited', 'Too many failed sign-ins: try again later', {
      retry_after_seconds: retryAfter,
    });
  }

  async #sweep(now: Date): Promise<void> {
    if (now.getTime() - this.#lastSweep < 60_000) return;
    this.#lastSweep = now.getTime();
    await sweepAttempts(this.#o.db, now, new Date(now.getTime() - this.#o.windowMs));
  }
}
