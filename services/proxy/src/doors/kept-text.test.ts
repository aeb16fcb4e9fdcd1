import { describe, expect, it } from 'vitest';
import { ProducedText, TEXT_KEEP_CHARS } from './chat/usage';
import { KeptText } from './kept-text';

type Json = Record<string, unknown>;

const chunk = (choices: Json[]): Json => ({ id: 'c', object: 'chat.completion.chunk', choices });

/** The same chunks through the chat relay's ProducedText (their JSON text) and KeptText (parsed). */
function both(chunks: Json[]) {
  const produced = new ProducedText();
  const kept = new KeptText();
  for (const c of chunks) {
    produced.addChunk(JSON.stringify(c));
    kept.addChunk(c);
  }
  return { produced: produced.result(), kept: kept.result() };
}

describe('KeptText', () => {
  it('keeps the text of every choice: content, reasoning, refusal, tool call names and arguments', () => {
    const { produced, kept } = both([
      chunk([{ index: 0, delta: { role: 'assistant', reasoning: 'Think. ' } }]),
      chunk([
        { index: 0, delta: { content: 'Hello' } },
        { index: 1, delta: { content: ' two' } },
      ]),
      chunk([
        { index: 0, delta: { tool_calls: [{ index: 0, function: { name: 'f', arguments: '{"a":' } }] } },
      ]),
      chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '1}' } }] } }]),
      chunk([{ index: 0, delta: { refusal: ' no', reasoning_content: ' r' } }]),
      chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
      { id: 'c', choices: [], usage: { prompt_tokens: 1 } },
    ]);
    expect(kept).toEqual({ text: 'Think. Hello twof{"a":1} r no', overflowBytes: 0 });
    expect(kept).toEqual(produced);
  });

  it('keeps TEXT_KEEP_CHARS, never half a surrogate pair, and counts the rest in UTF-8 bytes, as ProducedText', () => {
    const piece = `${'x'.repeat(99)}😀`; // 101 UTF-16 units: pairs fall across the cut
    const chunks = Array.from({ length: Math.ceil((TEXT_KEEP_CHARS * 1.5) / piece.length) }, () =>
      chunk([{ index: 0, delta: { content: piece } }]),
    );
    const { produced, kept } = both(chunks);
    expect(kept.text.length).toBeLessThanOrEqual(TEXT_KEEP_CHARS);
    expect(kept.text.length).toBeGreaterThan(TEXT_KEEP_CHARS - 2);
    expect(kept.overflowBytes).toBeGreaterThan(0);
    expect(Buffer.byteLength(kept.text) + kept.overflowBytes).toBe(Buffer.byteLength(piece) * chunks.length);
    expect(kept).toEqual(produced);
  });
});
