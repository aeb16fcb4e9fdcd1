import { describe, expect, it } from 'vitest';
import { answerText } from './answer-text';
import { BodyCapture } from './capture';
import {
  compilePatterns,
  DEFAULT_REDACT_PATTERNS,
  keepBody,
  REDACT_SLACK,
  REDACTED,
  redact,
  truncate,
} from './redact';

const defaults = compilePatterns(DEFAULT_REDACT_PATTERNS);

describe('redaction', () => {
  it('replaces API keys, bearer tokens and e-mail addresses with the default patterns', () => {
    const key = `sk-tg-v1-${'ab12'.repeat(16)}`;
    const text = `use ${key} or sk-proj-ABCDEFGHIJKLMNOPQRST, mail ana.lopez+x@example.co.uk, Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc and AKIAIOSFODNN7EXAMPLE`;
    const out = redact(text, defaults);
    expect(out).toBe(
      `use ${REDACTED} or ${REDACTED}, mail ${REDACTED}, Authorization: ${REDACTED} and ${REDACTED}`,
    );
  });

  it('leaves text without a match as it is, and applies configured patterns only', () => {
    expect(redact('nothing secret here: sk-short', defaults)).toBe('nothing secret here: sk-short');
    const custom = compilePatterns([String.raw`\d{3}-\d{2}-\d{4}`]);
    expect(redact('ssn 123-45-6789, me@example.com', custom)).toBe(`ssn ${REDACTED}, me@example.com`);
  });

  it('refuses an invalid pattern, naming it', () => {
    expect(() => compilePatterns(['(unclosed'])).toThrow(/invalid redaction pattern "\(unclosed"/);
  });

  it('is stable when the same compiled (global) pattern runs twice', () => {
    expect(redact('a@b.io a@b.io', defaults)).toBe(`${REDACTED} ${REDACTED}`);
    expect(redact('c@d.io', defaults)).toBe(REDACTED);
  });
});

describe('truncation', () => {
  it('keeps a body within the bound as it is', () => {
    expect(truncate('hello', 5)).toEqual({ text: 'hello', truncated: false });
  });

  it('cuts at the byte bound with a marker counting the dropped bytes', () => {
    const out = truncate('abcdefghij', 4);
    expect(out).toEqual({ text: 'abcd\n[… truncated: 6 more bytes]', truncated: true });
  });

  it('never cuts inside a UTF-8 character', () => {
    // 'é' is 2 bytes, '✓' 3: a cut at 3 bytes would split the check mark.
    const out = truncate('é✓x', 3);
    expect(out.text).toBe('é\n[… truncated: 4 more bytes]');
    expect(out.text).not.toContain('\uFFFD');
  });

  it('redacts before it cuts, so a secret across the bound is not half-kept', () => {
    const secret = `sk-${'Z'.repeat(40)}`;
    const text = `${'a'.repeat(10)}${secret} and more text after it`;
    const kept = keepBody(text, { maxBytes: 20, patterns: defaults });
    expect(kept.text.startsWith(`${'a'.repeat(10)}${REDACTED}`)).toBe(true);
    expect(kept.text).not.toContain('sk-Z');
    expect(kept.truncated).toBe(true);
  });

  it('looks at most maxBytes + REDACT_SLACK characters and counts the rest as dropped', () => {
    const text = 'x'.repeat(100 + REDACT_SLACK + 50);
    const kept = keepBody(text, { maxBytes: 100, patterns: defaults });
    expect(kept.text).toBe(`${'x'.repeat(100)}\n[… truncated: ${REDACT_SLACK + 50} more bytes]`);
  });
});

const sse = (events: unknown[]) =>
  events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n';

describe('answer text', () => {
  it('reads a chat stream’s deltas (content and tool call arguments)', () => {
    const raw = sse([
      { choices: [{ delta: { role: 'assistant', content: 'Hel' } }] },
      { choices: [{ delta: { content: 'lo' } }] },
      { choices: [{ delta: { tool_calls: [{ function: { name: 'f', arguments: '{"a":1}' } }] } }] },
      { choices: [], usage: { prompt_tokens: 1 } },
    ]);
    expect(answerText(raw, true)).toBe('Hellof{"a":1}');
  });

  it('reads Messages and Responses streams', () => {
    const messages = sse([
      { type: 'content_block_start', content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', delta: { type: 'text_delta', text: 'Bonjour' } },
    ]);
    expect(answerText(messages, true)).toBe('Bonjour');
    const responses = sse([
      { type: 'response.output_text.delta', delta: 'Hi ' },
      { type: 'response.output_text.delta', delta: 'there' },
      { type: 'response.completed', response: { output: [] } },
    ]);
    expect(answerText(responses, true)).toBe('Hi there');
  });

  it('reads events as the one SSE reader does: CRLF, data split over lines, named events, no last blank line', () => {
    const raw =
      'event: content_block_delta\r\ndata: {"type":"content_block_delta",\r\ndata: "delta":{"text":"Bon"}}\r\n\r\n' +
      ': keep-alive\n\n' +
      'data: {"choices":[{"delta":{"content":"jour"}}]}';
    expect(answerText(raw, true)).toBe('Bonjour');
  });

  it('reads a JSON answer of each door, and keeps an answer without text as it came', () => {
    expect(answerText(JSON.stringify({ choices: [{ message: { content: 'chat' } }] }), false)).toBe('chat');
    expect(answerText(JSON.stringify({ content: [{ type: 'text', text: 'msg' }] }), false)).toBe('msg');
    const resp = { output: [{ type: 'message', content: [{ type: 'output_text', text: 'resp' }] }] };
    expect(answerText(JSON.stringify(resp), false)).toBe('resp');
    const embedding = JSON.stringify({ data: [{ embedding: [0.1, 0.2] }] });
    expect(answerText(embedding, false)).toBe(embedding);
  });
});

describe('BodyCapture', () => {
  const config = { maxBytes: 256, patterns: defaults };

  it('keeps the caller’s body as the prompt and the answer’s text, redacted', () => {
    const capture = new BodyCapture(config, {
      model: 'm',
      messages: [{ role: 'user', content: 'mail me@x.org' }],
    });
    capture.answer(sse([{ choices: [{ delta: { content: 'ok me@x.org' } }] }]));
    const kept = capture.result(true);
    expect(kept).toEqual({
      prompt: `{"model":"m","messages":[{"role":"user","content":"mail ${REDACTED}"}]}`,
      answer: `ok ${REDACTED}`,
      truncated: false,
    });
  });

  it('holds at most 8 × maxBytes of a long answer and marks it cut', () => {
    const capture = new BodyCapture(config, {});
    const chunk = Buffer.from(
      sse([{ choices: [{ delta: { content: 'y'.repeat(100) } }] }]).replace('data: [DONE]\n\n', ''),
    );
    for (let i = 0; i < 200; i++) capture.answer(chunk);
    const kept = capture.result(true);
    expect(kept.truncated).toBe(true);
    expect(kept.answer.startsWith('y'.repeat(256))).toBe(true);
    expect(kept.answer).toMatch(/\n\[… truncated: \d+ more bytes\]$/);
    expect(Buffer.byteLength(kept.answer)).toBeLessThan(256 + 64);
  });
});
