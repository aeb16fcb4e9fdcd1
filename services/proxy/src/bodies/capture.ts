import { answerText } from './answer-text';
import { keepBody } from './redact';

/** The proxy's opt-in bodies settings (BODIES_MAX_BYTES, BODIES_REDACT; config.ts). */
export interface BodiesConfig {
  /** Most UTF-8 bytes of a kept prompt, and of a kept answer (then a truncation marker). */
  maxBytes: number;
  /** Replaced by `[REDACTED]` before a body leaves the proxy. */
  patterns: readonly RegExp[];
}

/** A kept prompt and answer, as the usage event carries them. */
export interface KeptBodies {
  prompt: string;
  answer: string;
  truncated: boolean;
}

/**
 * The raw answer bytes kept per completion, as a multiple of BODIES_MAX_BYTES: a stream's events carry
 * several times their text in JSON around it; beyond this the answer is cut (and marked).
 */
const RAW_FACTOR = 8;

/**
 * One completion's prompt and answer, captured for a key that keeps them (`storeBodies` in its cached
 * record: no other key pays anything). The prompt is the caller's JSON body as received; the answer
 * is what the door sent the client, held as bytes up to RAW_FACTOR × maxBytes (nothing is buffered
 * for the client: the stream is relayed as before, a copy of its chunks kept here). `result()` — once,
 * when the completion ends — reads the answer's text, redacts both and cuts them to maxBytes.
 */
export class BodyCapture {
  readonly #config: BodiesConfig;
  readonly #prompt: string;
  readonly #chunks: Uint8Array[] = [];
  #bytes = 0;
  #dropped = 0;

  constructor(config: BodiesConfig, body: unknown) {
    this.#config = config;
    this.#prompt = JSON.stringify(body) ?? '';
  }

  /** A piece of the answer as the client gets it (stream chunks in order, or the whole JSON body). */
  answer(piece: string | Uint8Array): void {
    const bytes = typeof piece === 'string' ? Buffer.from(piece, 'utf8') : piece;
    const room = this.#config.maxBytes * RAW_FACTOR - this.#bytes;
    if (room <= 0) {
      this.#dropped += bytes.length;
      return;
    }
    const kept = bytes.length <= room ? bytes : bytes.subarray(0, room);
    this.#chunks.push(kept);
    this.#bytes += kept.length;
    this.#dropped += bytes.length - kept.length;
  }

  /** The kept bodies: answer text read from what was captured, both redacted, then cut. */
  result(streamed: boolean): KeptBodies {
    const raw = Buffer.concat(this.#chunks).toString('utf8');
    const prompt = keepBody(this.#prompt, this.#config);
    const answer = keepBody(answerText(raw, streamed), this.#config, this.#dropped);
    return { prompt: prompt.text, answer: answer.text, truncated: prompt.truncated || answer.truncated };
  }
}
