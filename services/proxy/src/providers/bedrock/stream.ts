import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { ChunkWriter, errorData, sseText, usageOf } from '../chunks';
import { bedrockErrorStatus } from './errors';
import { converseTokens, finishReasonOf } from './response';

/**
 * Bedrock ConverseStream bytes (AWS event-stream framing: length-prefixed binary messages with headers
 * and CRCs) → OpenAI chunk SSE text (one instance per stream). The framing is decoded by the AWS SDK's
 * own codec (`@smithy/core/event-streams`, which checks both CRCs); this class only cuts the byte
 * stream at each message's 4-byte total length. Events (`:event-type`): messageStart → role chunk;
 * contentBlockStart with a `toolUse` → a tool-call chunk; contentBlockDelta `text` → content,
 * `toolUse.input` → arguments; messageStop → finish chunk; metadata (after messageStop) → usage chunk
 * and `[DONE]`. An exception message (`:message-type: exception`, e.g. throttlingException) becomes the
 * error data the relay turns into the §6 error chunk; a frame whose CRC fails ends the stream as broken.
 */
type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const codec = new EventStreamCodec(toUtf8, fromUtf8);
type Message = ReturnType<typeof codec.decode>;

export class ConverseStreamBridge {
  private buffer: Uint8Array = new Uint8Array(0);
  private readonly out: ChunkWriter;
  /** Converse content-block index → OpenAI tool-call index. */
  private readonly tools = new Map<number, number>();
  private sawTool = false;

  constructor(model: string, created: number) {
    this.out = new ChunkWriter(model, created);
  }

  push(bytes: Uint8Array): string {
    this.buffer = this.buffer.length === 0 ? bytes : concat(this.buffer, bytes);
    const chunks: string[] = [];
    let done = false;
    while (this.buffer.length >= 4) {
      const total = new DataView(this.buffer.buffer, this.buffer.byteOffset, 4).getUint32(0);
      if (this.buffer.length < total) break;
      const frame = this.buffer.subarray(0, total);
      this.buffer = this.buffer.subarray(total);
      let message: Message;
      try {
        message = codec.decode(frame);
      } catch {
        chunks.push(errorData(502, 'Provider stream frame failed its checksum', 'serialization'));
        this.buffer = new Uint8Array(0);
        break;
      }
      done = this.read(message, chunks) || done;
    }
    return sseText(chunks, done);
  }

  end(): string {
    return '';
  }

  /** One event; true when it ends the answer (metadata). */
  private read(message: Message, chunks: string[]): boolean {
    const kind = String(message.headers[':message-type']?.value ?? 'event');
    const type = String(
      message.headers[':event-type']?.value ?? message.headers[':exception-type']?.value ?? '',
    );
    let body: Json = {};
    try {
      body = JSON.parse(toUtf8(message.body)) as Json;
    } catch {}
    if (kind !== 'event') {
      const text = typeof body.message === 'string' ? body.message : type || 'Provider stream error';
      chunks.push(errorData(bedrockErrorStatus(type), text, type || null));
      return false;
    }
    switch (type) {
      case 'messageStart':
        chunks.push(this.out.role());
        return false;
      case 'contentBlockStart': {
        const start = isObj(body.start) ? body.start.toolUse : undefined;
        if (isObj(start) && typeof body.contentBlockIndex === 'number') {
          const i = this.tools.size;
          this.tools.set(body.contentBlockIndex, i);
          this.sawTool = true;
          chunks.push(
            this.out.toolCall(i, {
              id: String(start.toolUseId ?? ''),
              name: String(start.name ?? ''),
              arguments: '',
            }),
          );
        }
        return false;
      }
      case 'contentBlockDelta': {
        const d = isObj(body.delta) ? body.delta : {};
        if (typeof d.text === 'string' && d.text.length > 0) chunks.push(this.out.content(d.text));
        else if (isObj(d.toolUse) && typeof d.toolUse.input === 'string' && d.toolUse.input.length > 0) {
          const i =
            typeof body.contentBlockIndex === 'number' ? this.tools.get(body.contentBlockIndex) : undefined;
          if (i !== undefined) chunks.push(this.out.toolArguments(i, d.toolUse.input));
        }
        return false;
      }
      case 'messageStop': {
        const reason = finishReasonOf(body.stopReason);
        chunks.push(this.out.finish(reason === 'stop' && this.sawTool ? 'tool_calls' : reason));
        return false;
      }
      case 'metadata': {
        const tokens = converseTokens(body.usage);
        if (tokens) chunks.push(this.out.usage(usageOf(tokens)));
        return true;
      }
      default:
        return false; // contentBlockStop, and event types added later
    }
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}
