import type { Catalog } from '@tollgate/catalog';
import { AppError } from '@tollgate/errors';
import { authenticatedKey } from '../auth/authenticate';
import { type Recall, type RecallDeps, withRecall } from '../auth/recall';
import { type BodiesConfig, BodyCapture } from '../bodies/capture';
import type { FrontDoor } from '../doors/door';
import type { Handler, ProxyRequest, ProxyResponse } from '../http/types';
import { type AdmitDeps, type Admitted, admit } from './admit';
import type { Completion } from './completion';
import { answer, finish } from './finish';
import type { Outcome } from './outcome';
import { parse } from './parse';
import { plan } from './plan';
import { type RelayDeps, relay } from './relay';

/** Everything the pipeline's stages need (built once by http/app.ts). */
export interface PipelineDeps extends AdmitDeps, RelayDeps {
  catalog: Catalog;
  /** Completions in flight (the shutdown deadline stops them with the door's error, see app.ts). */
  live?: Set<Completion>;
  /** Recalled key records, checked by the admission script (auth/recall.ts); absent: never recalled. */
  recalled?: RecallDeps;
  /** Opt-in bodies: what is kept for a key with `storeBodies` (absent: nothing is, whatever the key says). */
  bodies?: BodiesConfig;
}

/** A relay that threw (a bug): ended like a broken answer, so the completion still ends once. */
const UNFINISHED: Outcome = Object.freeze({
  kind: 'failed',
  error: new AppError('internal', 'Internal server error'),
});

/**
 * The completion pipeline behind one front door (doors/<door>/): the route handler, after
 * authentication, the scope check and the JSON body. Its stages are named and hand values on:
 *
 *   parse (door → canonical request, model) → plan (candidates, bodies per wire format) →
 *   admit (usage record possible, concurrency slot, spend: the worst case reserved → Completion) →
 *   relay (dispatch: the attempt loop with failover; the answer, JSON or stream, through the door)
 *   → Outcome → finish (exactly once) → answer (the end of the response)
 *
 * Errors thrown before the answer reach the one error writer (the door's envelope).
 */
export function completionPipeline(door: FrontDoor, deps: PipelineDeps): Handler {
  const available = (provider: string) => deps.routing.health.available(provider);
  const planDeps = { catalog: deps.catalog, available };

  async function run(req: ProxyRequest, res: ProxyResponse, recall: Recall | null): Promise<void> {
    const key = authenticatedKey(res);
    // Opt-in bodies (issue 28): the caller's body as received, before any stage reads or rewrites it.
    const bodies = key.storeBodies && deps.bodies ? new BodyCapture(deps.bodies, req.body) : null;
    const parsed = parse(door, req.body, key, deps.catalog, req.headers);
    const planned = plan(door, parsed, key, planDeps);
    const admitted: Admitted = await admit(deps, req, res, planned, key, recall, bodies);
    const c = admitted.completion;
    deps.live?.add(c);
    // Whatever the relay says, or, should it throw, a failure billed like a broken answer.
    let outcome: Outcome = UNFINISHED;
    try {
      outcome = await relay(deps, c, planned, res);
    } finally {
      finish(admitted, outcome, deps.live);
    }
    answer(door, c, res, outcome);
  }

  return withRecall(deps.recalled, run);
}
