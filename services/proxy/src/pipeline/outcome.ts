import type { AppError } from '@tollgate/errors';
import type { TokenCounts } from '../providers/wire-format';

/** Where a completion's token counts come from. */
export type UsageSource = 'provider' | 'estimated';

/**
 * How a completion ended: what `Completion.finish` settles and records. Every terminal path of the
 * pipeline's relay stage (pipeline/relay.ts, the door's AnswerStream) produces exactly one.
 *
 * - `served`: the provider answered (JSON, or a stream to its end, cut mid-stream, timed out or
 *   stopped by a lapsed lease after the 200: then `fail` recorded why): billed from the provider's
 *   usage or the estimate of what was produced, one usage event;
 * - `refused`: nothing was consumed (the provider refused the request, no candidate could serve it,
 *   the duration cap or a lapsed lease stopped it before the answer): no charge, no event;
 * - `cancelled`: the client went away before the answer: the prompt was sent, its estimate is billed;
 * - `failed`: the provider accepted the request and broke off before the answer reached the client
 *   (broken or invalid body): its estimate is billed, with the error on the record.
 */
export type Outcome =
  | {
      kind: 'served';
      tokens: TokenCounts;
      source: UsageSource;
      costUnits: bigint;
      finishReason: string | null;
      upstreamId: string | null;
      /** The end of the answer, written after the completion ended (null: the client is gone). */
      lastBytes: string | Buffer | null;
    }
  | { kind: 'refused'; error: AppError }
  | { kind: 'cancelled' }
  | { kind: 'failed'; error: AppError };
