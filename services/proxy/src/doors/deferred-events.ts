import { RAW_KEEP_CHARS } from './chat/usage';

/**
 * Events of a natively relayed stream (Messages, Responses) that matter only for the estimate of what
 * was produced — their text deltas, needed when the provider reports no usage — kept as their raw
 * data, unparsed, and read (`read`) only when the text is asked for or more than `keepChars` of them
 * are held (then each is read once, in order, and dropped). A stream whose provider reports usage,
 * as they do, parses none of its deltas (issue 30: the chat relay does not parse its content chunks
 * either); memory per stream stays bounded (RAW_KEEP_CHARS, as chat's ProducedText).
 */
export class DeferredEvents {
  private pending: string[] = [];
  private chars = 0;

  constructor(
    private readonly read: (data: string) => void,
    private readonly keepChars = RAW_KEEP_CHARS,
  ) {}

  add(data: string): void {
    this.pending.push(data);
    this.chars += data.length;
    if (this.chars > this.keepChars) this.settle();
  }

  /** Reads every held event, in order (before the text they carry is used). */
  settle(): void {
    if (this.pending.length === 0) return;
    const held = this.pending;
    this.pending = [];
    this.chars = 0;
    for (const data of held) this.read(data);
  }
}
