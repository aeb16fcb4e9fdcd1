import type { AppError } from '@tollgate/errors';
import type { CachedKey, KeyCache } from '@tollgate/key-cache';
import type { Handler, ProxyRequest, ProxyResponse } from '../http/types';
import { KeyRateLimited, type SpendCheck, StaleKeyRecord } from '../spend/guard';
import { authenticatedKey, rateLimitVerdict, uncheckedDigest } from './authenticate';

/**
 * Checked admission of recalled key records (authenticate.ts `recall`): the key cache's layout for
 * the check, and the way back when it fails — forget the record, authenticate afresh.
 */
export interface RecallDeps {
  keyCache: KeyCache;
  forget(digest: string): void;
  /** Records the key's use (`last_used_at`) once its recalled record was checked. */
  used(keyId: string): void;
  /** The route's authentication as if nothing was recalled (401/403/429 thrown). */
  reauthenticate(req: ProxyRequest, res: ProxyResponse): Promise<void>;
  now(): number;
}

/**
 * A request whose key record was recalled (no Redis read yet): its admission script checks the
 * record (`check`) and counts the request against the key's rate limit in the same call.
 */
export class Recall {
  /** The admission script found the record current (the request is authenticated and counted). */
  verified = false;
  /** Its 429 when the script counted it over the key's rate limit. */
  private limited: AppError | null = null;

  constructor(
    private readonly deps: RecallDeps,
    readonly digest: string,
    private readonly res: ProxyResponse,
  ) {}

  /** The admission's check of the record (rate-limit headers set once it counted the request). */
  check(key: CachedKey): SpendCheck {
    const deps = this.deps;
    const now = deps.now();
    const window = deps.keyCache.rateWindow(this.digest, now);
    return {
      recordKey: deps.keyCache.redisKey(this.digest),
      version: key.version,
      counterKey: window.counterKey,
      counterTtlMs: window.counterTtlMs,
      rateLimit: key.rateLimitRpm ?? null,
      onCount: (count) => {
        this.verified = true;
        deps.used(key.id);
        this.limited = rateLimitVerdict(this.res, key, { count, windowEndMs: window.windowEndMs }, now);
      },
    };
  }

  /**
   * An admission that failed: its error as the client sees it (the key's own 429 when the script
   * counted it over its rate limit). `release` frees what admission held when the record was never
   * checked: the request may then be handled again from the start (`withRecall`).
   */
  admissionFailed(err: unknown, release: () => void): unknown {
    if (err instanceof KeyRateLimited && this.limited) return this.limited;
    if (!this.verified) release();
    return err;
  }
}

/** A route's run: `recall` is null when the key record was read (or re-read), not recalled. */
type Run = (req: ProxyRequest, res: ProxyResponse, recall: Recall | null) => Promise<void>;

/**
 * The route handler for `run`. A request whose key record was recalled runs with that record; its
 * admission checks it. Should that check find it stale, or anything fail before the check ran, the
 * request is authenticated afresh first, so it ends exactly as without the recall (401 for a key
 * disabled meanwhile, 400 for a bad body of a valid key, …); a stale record is then served with the
 * new one. Without `deps` (a spend guard that cannot check), records are never recalled.
 */
export function withRecall(deps: RecallDeps | undefined, run: Run): Handler {
  async function recalled(req: ProxyRequest, res: ProxyResponse, d: RecallDeps, digest: string) {
    const recall = new Recall(d, digest, res);
    const used = authenticatedKey(res);
    try {
      await run(req, res, recall);
    } catch (err) {
      if (recall.verified) throw err;
      d.forget(digest);
      (res.locals as { unchecked?: string }).unchecked = undefined;
      await d.reauthenticate(req, res);
      // The record changed (its allowed models, limit, …): the request is decided again with the new one.
      if (err instanceof StaleKeyRecord || authenticatedKey(res).version !== used.version) {
        await run(req, res, null);
        return;
      }
      throw err;
    }
  }
  return (req, res, next) => {
    const digest = deps ? uncheckedDigest(res) : null;
    (digest === null || !deps ? run(req, res, null) : recalled(req, res, deps, digest)).catch(next);
  };
}
