import type { KeyScope } from '@tollgate/auth';
import type { CachedKey } from '@tollgate/key-cache';
import type { Dispatcher } from 'undici';
import { type Authenticator, authenticatedKey } from '../auth/authenticate';
import type { Handler, ProxyRequest, ProxyResponse } from '../http/types';
import type { Forwarder } from './forward';

const noop = () => {};

/** An answer nobody will relay: read to its end and dropped (the pooled connection stays usable). */
function drop(answer: Promise<Dispatcher.ResponseData> | null): void {
  answer?.then((up) => up.body.dump().catch(noop), noop);
}

const sameCaller = (a: CachedKey, b: CachedKey) =>
  a.id === b.id && a.accountId === b.accountId && a.scope === b.scope;

/**
 * `GET /key`, `/credits`, `/generation`: reads without side effects in their owner, so the owner is
 * asked *while* the key is authenticated instead of after it (issue 11: their p50 paid the key-cache
 * round trip and the owner's answer one after the other).
 *
 * The early request is signed for the key, account and scope of the record this process last read
 * for the bearer key (the recalled records of the chat route, `Authenticator.peek`: no I/O). The
 * route's own authentication runs as on every route (key cache, rate limit, scope) and decides:
 * refused (401/403/429…) → that refusal, the early answer dropped; confirmed as the same key, account
 * and scope → the early answer is relayed; anything else (nothing remembered, another identity) → the
 * request is sent again with the confirmed identity, as before. Keys with a `rate_limit_rpm` are not
 * asked early (a request over the limit must cost the owner nothing). So a client gets exactly what it got
 * before, a key disabled or revoked meanwhile is refused on its very next request, and the owner's
 * answer to an early request that was not confirmed never leaves the proxy.
 */
export function accountRead(deps: {
  forwarder: Pick<Forwarder, 'send' | 'relay'>;
  authenticator: Pick<Authenticator, 'peek'>;
  /** The route's authentication and scope steps (resolves when both pass, rejects with their error). */
  authenticate(req: ProxyRequest, res: ProxyResponse): Promise<void>;
  /** The scope the route requires (null: any); an early request is sent only for a record that has it. */
  scope: KeyScope | null;
}): Handler {
  return async (req, res, next) => {
    const remembered = deps.authenticator.peek(req.headers.authorization);
    // A key with a request rate limit is counted before its owner is asked, as before: early
    // requests would let its refused (429) requests reach the owner's database all the same.
    const claimed =
      remembered &&
      remembered.rateLimitRpm == null &&
      (deps.scope === null || remembered.scope === deps.scope)
        ? remembered
        : null;
    const early = claimed ? deps.forwarder.send(req, claimed) : null;
    // Observed here so a failure is never unhandled; it reaches the client only if the identity is confirmed.
    early?.catch(noop);
    try {
      await deps.authenticate(req, res);
    } catch (err) {
      drop(early);
      next(err);
      return;
    }
    const key = authenticatedKey(res);
    let answer: Dispatcher.ResponseData;
    try {
      if (early && claimed && sameCaller(claimed, key)) answer = await early;
      else {
        drop(early);
        answer = await deps.forwarder.send(req, key);
      }
    } catch (err) {
      next(err);
      return;
    }
    await deps.forwarder.relay(res, answer);
  };
}
