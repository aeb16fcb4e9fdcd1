import type { IncomingHttpHeaders } from 'node:http';
import type { CatalogModel, CatalogProvider } from '@tollgate/catalog';
import type { AppError } from '@tollgate/errors';
import type { Handler, ProxyResponse } from '../http/types';
import type { Completion } from '../pipeline/completion';
import type { Outcome } from '../pipeline/outcome';
import type { CanonicalRequest } from '../pipeline/request';
import type { WireFormat, WireFormatName } from '../providers/wire-format';

type Json = Record<string, unknown>;

/** The API a request came in by: the usage event's and the generation record's `api_type`. */
export type ApiType = 'chat' | 'messages' | 'responses' | 'embeddings';

/** The candidate a native body is built for (routing/candidates.ts). */
interface NativeTarget {
  upstreamModel: string;
  /** The provider is the simulator (`simulator: true`): test-only fields may pass. */
  simulator: boolean;
}

/**
 * The answer of a streamed request as the door relays it: the pipeline's relay stage feeds it the
 * provider's bytes — in the door's own format when the provider speaks it (`native`), else as OpenAI
 * chat-completion chunks (the provider's wire format bridged them, providers/) — and it writes the
 * door's events to the client as they complete. `finish` prices what it saw and returns the `Outcome`.
 */
export interface AnswerStream {
  /** Keep-alive comments while the first token is slow (the first one commits the 200). */
  startKeepAlive(intervalMs: number): void;
  stopKeepAlive(): void;
  /**
   * The provider accepted the stream: the 200 and the SSE head leave with the first bytes written.
   * `native`: the bytes that follow are in the door's own format, else OpenAI chat-completion chunks.
   */
  commitHead(native: boolean): void;
  /**
   * One read of the provider's body; `last`: its end came with it (may be held for the final write).
   * Once the completion is cancelled (`c.cancelled`: its client went away), the bytes are still read
   * for the usage — the completion drains (pipeline/drain.ts) — but nothing is written or waited for.
   * Returns a promise only when the client's buffer is full (the provider's connection waits for it);
   * it rejects when the completion is aborted meanwhile.
   */
  push(bytes: Buffer, last?: boolean): Promise<void> | undefined;
  /** The provider's body ended cleanly. */
  endOfInput(): void;
  /** The provider sent an error event: stop reading (the completion's error is recorded). */
  readonly terminated: boolean;
  /** What is billed and the last bytes of the answer (the usage, the error event if any, the end). */
  finish(): Outcome;
}

/**
 * A front door: one public API the proxy answers (chat completions, Anthropic Messages, OpenAI
 * Responses, embeddings), the mirror of a provider `WireFormat` (providers/wire-format.ts). It parses
 * its API's request into the canonical request (pipeline/request.ts) and renders the answer, the
 * stream events and the errors in its API's shape; everything in between — plan, admit, dispatch with
 * failover, relay, finish — is the pipeline's (pipeline/), the same for every door.
 *
 * Two ways through, decided per serving candidate:
 * - **native**: the candidate's wire format is the door's own (`native`): the caller's body passes
 *   through with only the model replaced (`nativeBody`), and the provider's answer and events reach
 *   `readJson` / the `AnswerStream` as they came (`native: true`). Chat → an OpenAI provider is this path (the
 *   byte relay of doors/chat/).
 * - **translated**: any other format: the wire format translates the canonical (chat) request and
 *   bridges its answer back to a `chat.completion` / OpenAI chunks (`native: false`), which the door
 *   renders in its own shape.
 *
 * docs/architecture.md "How to add a front door" walks through one.
 */
export interface FrontDoor {
  /** Names the door (`api_type` of the usage event and the generation record; the metrics' `route`). */
  readonly api: ApiType;
  /** Its path under /api/v1 and /v1 (`POST`), e.g. `/chat/completions` (doors/index.ts mounts it). */
  readonly path: string;
  /** Steps before authentication, if any (Messages: its clients' `x-api-key` read as the bearer key). */
  readonly before?: readonly Handler[];
  /** The provider wire format this API is, if any (its requests and answers pass through). */
  readonly native: WireFormatName | null;
  /**
   * Which providers speak this API natively, when that is not simply every provider of the `native`
   * format: the Responses door's are the OpenAI-format providers the catalog marks `responses: true`
   * (their chat-completions path stays for the other doors). Absent: `provider.format === native`.
   */
  nativeFor?(provider: CatalogProvider): boolean;
  /** The path of the native API under a provider's base URL, when not its format's (`<base>/responses`). */
  nativePath?(baseUrl: string): string;
  /**
   * Parse: the request body (and its headers, for what the door passes on natively) → the canonical
   * request; a bad request is a 400 AppError naming the field.
   */
  parse(body: unknown, headers?: IncomingHttpHeaders): CanonicalRequest;
  /**
   * The upstream body for a candidate of the `native` format (the caller's body, model replaced).
   * Absent: the native wire format builds it from the canonical request like any other (chat).
   */
  nativeBody?(request: CanonicalRequest, target: NativeTarget): Json;
  /**
   * A JSON answer → the served outcome (priced, `lastBytes` the body to send), or null when it is not
   * an answer (then 502 invalid response, billed as a failure). `native`: the provider's own JSON in
   * the door's format; else the wire format's `chat.completion` (OpenAI-shaped usage).
   */
  readJson(c: Completion, json: Json, native: boolean): Outcome | null;
  /**
   * The relay of one streamed answer (see AnswerStream), made before dispatch (its keep-alive runs
   * while the first token is slow); `writeTimeoutMs`: a client that stops reading this long is cut.
   */
  stream(c: Completion, res: ProxyResponse, writeTimeoutMs: number): AnswerStream;
  /**
   * The wire formats this door reaches providers with (embeddings: each format's embeddings endpoint,
   * providers/<format>/embeddings.ts). Absent: the chat-completion formats (providers/index.ts).
   */
  wireFormat?(name: WireFormatName): WireFormat;
  /**
   * The door's checks of a request against its catalog model (embeddings: an embeddings model, its
   * input limits; 400/413 naming the limit). Absent: the model must be a text model.
   */
  check?(request: CanonicalRequest, model: CatalogModel): void;
  /** An error before the head: its status and body in this API's error envelope. */
  errorBody(err: AppError): { status: number; body: unknown };
  /** An error after the 200 (the head is committed): the last events of the stream, in this API's shape. */
  streamError(err: AppError, providerName: string): string;
}

/** The provider speaks the door's API itself: the caller's body and the provider's answer pass through. */
export const isNativeFor = (door: FrontDoor, provider: CatalogProvider): boolean =>
  door.nativeFor ? door.nativeFor(provider) : provider.format === door.native;
