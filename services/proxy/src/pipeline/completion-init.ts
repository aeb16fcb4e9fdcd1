import type { CatalogModel, CatalogProvider } from '@tollgate/catalog';
import type { UsageEvent } from '@tollgate/events';
import type { CachedKey } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import type { BodyCapture } from '../bodies/capture';
import type { ApiType } from '../doors/door';
import type { SpendReservation } from '../spend/guard';
import type { RequestMedia } from './media';
import type { CanonicalRequest } from './request';

// What a Completion (completion.ts) is made of by the admit stage, what it reports to, and what it
// records per attempt.

/** Where usage events go (the @tollgate/events publisher: synchronous, buffered, never throws). */
export interface UsageSink {
  publish(event: UsageEvent): void;
  /** False when a new event could be neither sent nor spooled: the request is refused (503). */
  canAdmit?(): boolean;
}

/** Token estimates for requests the provider did not report usage for (@tollgate/tokens). */
export interface TokenEstimator {
  estimatePromptTokens(messages: readonly unknown[], toolsJson: string | null): number;
  estimateCompletionTokens(text: string): number;
}

/** One try of one candidate: what a user debugging a failover needs. */
export interface Attempt {
  provider: string;
  model: string;
  /** HTTP status of the provider's answer, or null for a transport failure. */
  status: number | null;
  /** `ok`, `http_<status>`, `timeout`, `unreachable`, `circuit_open`. */
  outcome: string;
  latency_ms: number;
}

export interface CompletionInit {
  requestId: string;
  key: CachedKey;
  /** The front door the request came in by (the usage event's `api_type`). */
  api: ApiType;
  request: CanonicalRequest;
  model: CatalogModel;
  provider: CatalogProvider;
  upstreamModel: string;
  app: string | null;
  /** HTTP-Referer of the request. */
  httpReferer: string | null;
  /** The service logger; the request's child logger (with requestId and keyId) is made on first use. */
  logger: Logger;
  /** The exact prompt estimate when admission already computed it (short prompts), else null. */
  promptEstimate: number | null;
  reservation: SpendReservation | null;
  /** How long a completion whose client went away keeps reading the provider for its usage (drain.ts). */
  cancelDrainMs?: number;
  /** The request's media and cache asks (media.ts), priced into the upper bound per serving model. */
  media?: RequestMedia;
  /** performance.now() when the request arrived at the proxy (the gateway overhead's start). */
  receivedAt?: number;
  /** Opt-in bodies (issue 28): the capture of a key with `storeBodies`, else null or absent. */
  bodies?: BodyCapture | null;
}
