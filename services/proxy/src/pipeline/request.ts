import type { AppError } from '@tollgate/errors';

type Json = Record<string, unknown>;

/** One message of the canonical request (an OpenAI chat message; only what the gateway reads is typed). */
export interface CanonicalMessage {
  role: string;
  content: string | unknown[] | null;
  [field: string]: unknown;
}

/**
 * The one request every stage after `parse` works with, whatever front door it came in by
 * (doors/<door>/): an OpenAI chat-completions body — the shape every wire format translates from
 * (providers/) — and the figures admission and the estimate read from it.
 */
export interface CanonicalRequest {
  /** The request as a chat-completions body (mutated in place into the upstream body). */
  body: Json;
  model: string;
  messages: CanonicalMessage[];
  stream: boolean;
  /**
   * The larger of max_completion_tokens and max_tokens, when given: providers differ in which one they
   * honour, so admission reserves for the larger.
   */
  maxTokens: number | null;
  /** Completions requested (`n`, default 1); admission reserves the output budget once per completion. */
  n: number;
  /**
   * JSON of the tool definitions the model is given (`tools`, legacy `functions`), or null: providers
   * bill them as prompt tokens, so the admission and the estimate count them.
   */
  toolsJson: string | null;
  /**
   * The caller's own body, when the door has a native wire format (`FrontDoor.native`): a candidate of
   * that format is sent this body with only the model replaced (`FrontDoor.nativeBody`), not a
   * translation of `body`. Absent for the chat door (its native format's request is `body` itself).
   */
  native?: Json;
  /**
   * Why a candidate of any format other than the door's native one cannot be sent this request (the
   * door's 400 naming the field): such candidates are skipped, and the error answers when no other is
   * left (plan.ts). Absent: every format can take it.
   */
  untranslatable?: AppError;
  /** Request headers the caller's body depends on, sent on to candidates of the door's native format. */
  nativeHeaders?: Record<string, string>;
  /**
   * The longest prompt-cache write the caller's native body asks for (`cache_control`, Anthropic:
   * `5m` by default, `1h` with `ttl: "1h"`), for the admission's cache-write bound: the canonical
   * messages do not carry `cache_control` (other formats must not get it). Absent: none asked.
   */
  cacheWrite?: '5m' | '1h';
  /**
   * Images and documents of the door's native body that the canonical messages do not carry (the
   * Messages door's file and URL sources): a native provider reads them, so admission reserves them.
   */
  nativeMedia?: { images: number; documents: number };
  /** The client's session id (Claude Code's `X-Claude-Code-Session-Id`), recorded with the usage. */
  sessionId?: string | null;
  /** The caller's end-user id (Anthropic `metadata.user_id`), recorded with the usage. */
  endUser?: string | null;
  /** Hosted tools the caller offered that no provider is given (the Responses door): the record's `withheld_tools`. */
  withheldTools?: string[];
  /** Headers the door adds to its answer (set with `X-Generation-Id` at admission). */
  answerHeaders?: ReadonlyArray<readonly [string, string]>;
  /**
   * The exact input token count, when the door counted it itself (embeddings: every token is input);
   * admission then reserves for it instead of estimating the chat prompt.
   */
  promptTokens?: number;
}
