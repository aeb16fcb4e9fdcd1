import type { CatalogModel, CatalogProvider } from '@tollgate/catalog';
import type { AppError } from '@tollgate/errors';

type Json = Record<string, unknown>;

/** Token counts of one request, OpenAI semantics: prompt includes cached and cache-write, completion includes reasoning. */
export interface TokenCounts {
  prompt: number;
  completion: number;
  cached: number;
  cacheWrite: number;
  /** The part of `cacheWrite` written for one hour (Anthropic `ttl: "1h"`), priced apart; absent: 0. */
  cacheWrite1h?: number;
  reasoning: number;
}

/** The catalog's `format` of a provider: which adapter speaks to it. */
export type WireFormatName = CatalogProvider['format'];

/** The candidate a request body is built for (routing/candidates.ts). */
interface RequestTarget {
  model: CatalogModel;
  provider: CatalogProvider;
  upstreamModel: string;
}

/** The HTTP request of one attempt: path (with query) and headers. */
export interface UpstreamRequest {
  path: string;
  headers: Record<string, string>;
}

/** What `WireFormat.attempt` builds one attempt's request from. */
export interface AttemptInput {
  provider: CatalogProvider;
  apiKey: string | undefined;
  upstreamModel: string;
  stream: boolean;
  /** The serialised upstream body (what a signature covers). */
  body: string;
  /** The provider's `path` and `headers` (built once per provider and key). */
  base: UpstreamRequest;
}

/** What a read response or stream is labelled with (the client sees the catalog model id). */
interface ReadContext {
  model: string;
  /** Unix seconds. */
  created: number;
}

/** Upstream stream bytes → OpenAI chat-completion SSE text for the relay ('' when nothing is complete yet). */
interface StreamBridge {
  push(bytes: Uint8Array): string;
  /** End of the upstream body: whatever a last event without its blank line completes. */
  end(): string;
}

/**
 * What a provider's HTTP error answer says happened, read by its wire format (status and body): the
 * adapter's own business. What the gateway does about it (another candidate, the key resting) is
 * dispatch's failover policy, in one place (pipeline/dispatch.ts).
 *
 * - `caller`: the request itself was refused (400, 404, 413, 422, …): another provider would refuse it too;
 * - `credentials`: the gateway's key was rejected, or its account at the provider is out of credit
 *   (401, 402, 403; Anthropic's 400 `billing_error`, Gemini's 400 `API_KEY_INVALID`);
 * - `rate_limited`: the provider throttles the gateway's key (429; Bedrock's 400 quota exception);
 * - `unavailable`: the provider cannot serve it now: timeouts and conflicts (408, 409), 5xx, overload
 *   (Anthropic's 529), or the gateway's own set-up there (Azure's unknown deployment, Gemini's
 *   `FAILED_PRECONDITION`).
 */
export type ProviderFailure = 'caller' | 'credentials' | 'rate_limited' | 'unavailable';

/** A provider's HTTP error answer (before any byte reached the client), as its wire format reads it. */
export interface ClassifiedHttpError {
  /** What happened (see ProviderFailure). */
  failure: ProviderFailure;
  /** What the client sees (closed error type, summarised message; providers/provider-error.ts). */
  summary: AppError;
  /** The provider's own text: logs and the generation record only. */
  detail: string | null;
}

/**
 * One provider wire format: everything the proxy needs to speak it. The proxy serves the OpenAI
 * chat-completions API, so every adapter hands back OpenAI-shaped completions, chunks and usage
 * (read by providers/openai/usage.ts); the pipeline and the doors never branch on the format.
 */
export interface WireFormat {
  readonly name: WireFormatName;
  /** `<base path>/<endpoint>` for a provider's base URL (built once per provider). */
  path(baseUrl: string): string;
  /** Request headers with one of the provider's keys (built once per provider and key). */
  headers(apiKey: string | undefined): Record<string, string>;
  /**
   * The caller's chat-completions body in this format, once per request before admission (the model
   * is filled in per candidate by `requestBody`). Throws a 400 AppError when the format cannot
   * express the request: its candidates are then skipped.
   */
  prepare(body: Json): Json;
  /** The upstream body for one candidate, from `prepare`'s result and the caller's original body. */
  requestBody(prepared: Json, target: RequestTarget, original: Json, stream: boolean): Json;
  /** A provider's JSON answer → a `chat.completion` (OpenAI-shaped usage), or null when it is not one. */
  readResponse(json: Json, ctx: ReadContext): Json | null;
  /** The translator of this format's stream into OpenAI chunks, or null when it already is one. */
  streamBridge(ctx: ReadContext): StreamBridge | null;
  /**
   * One attempt's path and headers when they depend on the model, the stream flag or the body
   * (Gemini: `models/<m>:streamGenerateContent?alt=sse`; Azure: the deployment and `api-version`;
   * Bedrock: a SigV4 signature over the body). Absent: `base`, the provider's path and headers.
   */
  attempt?(input: AttemptInput): UpstreamRequest | Promise<UpstreamRequest>;
  /** An HTTP error answer (status ≥ 300) with (the first 64 KiB of) its body. */
  classifyHttpError(status: number, bodyText: string, providerName: string): ClassifiedHttpError;
}
