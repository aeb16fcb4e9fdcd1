import { describe, expect, it } from 'vitest';
import { ByteOut } from './byte-out';
import { ChunkBytes, hasFinishReason, hasUsage, mayHaveError } from './chunk';
import { ChunkScan } from './chunk-scan';
import { keptPart } from './usage';

const ID = 'gen-1700000000-abcdefghijklmnopqrst';
const MODEL = 'vendor/model';

/** Events the relay meets, and odd ones: keys in content, spaces, escapes, unicode, U+001E, no JSON. */
const events = [
  '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}',
  '{"id":"c1","object":"chat.completion.chunk","model":"up","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}',
  '{"id":"c1","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}',
  '{"id":"c1","choices":[{"delta":{"content":"é \\"usage\\":{} \\"error\\":{} 😀"},"finish_reason":null}],"usage":null}',
  '{"id":"c1","usage":null,"model":"m","choices":[{"delta":{"content":"\\"model\\":\\"x\\""}}]}',
  '{"error":{"message":"overloaded","code":529}}',
  '{"error": {"message":"x"}}',
  '{"error":"text"}',
  '{"id":"c1","choices":[{"delta":{"content":"a"},"finish_reason":  "length"}]}',
  '{"id":"c1","choices":[{"finish_reason":null},{"finish_reason":"stop"}]}',
  '{"id":"c1","usage" : {"x":1}, "choices":[]}',
  '{"id":"c1","usage":  {"x":1}}',
  '{"id":"c1","meta":{"a":1},"choices":[{"delta":{"content":"x"}}]}',
  '{"id":"c1","tags":["a"],"choices":[{"delta":{"content":"x"}}]}',
  '{"id":"c1","choices":[{"delta":{"content":"a\x1eb"}}]}',
  '{"x":"\x1e","choices":[{"delta":{"content":"ab"}}]}',
  '{"choices":[{"delta":{"content":"first key"}}]}',
  ' {"id":"c1","choices":[]}',
  '{"id":"model":"x","model":"y"}',
  '{"id":"c\\"1","model":"m","choices":[]}',
  '{"id":"c1","object":"usage","model":"m"}',
  '{"id":"c1"}',
  '[DONE]',
  '[DONE] ',
  'not json "usage":{ "error":{',
  '',
  '"usage":',
  '{"finish_reason":',
];

/** Each event inside a larger read, as the SSE reader hands it over: bytes around it must not count. */
function inRead(data: string): { read: Buffer; start: number; end: number } {
  const before = Buffer.from('data: {"error":{"x":1},"usage":{"a":1},"finish_reason":"stop"}\n\ndata: ');
  const read = Buffer.concat([before, Buffer.from(data), Buffer.from('"usage":{"a":1}"error":{"b":2}')]);
  return { read, start: before.length, end: before.length + Buffer.byteLength(data) };
}

describe('ChunkScan (the relay reads an event from its bytes, in one pass)', () => {
  it('answers what the text functions answer on the decoded event', () => {
    const scan = new ChunkScan();
    for (const data of events) {
      const { read, start, end } = inRead(data);
      scan.scan(read, start, end);
      expect(scan.done, data).toBe(data === '[DONE]');
      expect(scan.error, data).toBe(mayHaveError(data));
      expect(scan.usage, data).toBe(hasUsage(data));
      expect(scan.finish, data).toBe(hasFinishReason(data));
      expect(scan.kept === -1 ? null : read.toString('utf8', scan.kept, end), data).toBe(keptPart(data));
    }
  });

  it('gives the byte rewrite the key positions it would have searched for', () => {
    const scan = new ChunkScan();
    for (const data of events) {
      const { read, start, end } = inRead(data);
      scan.scan(read, start, end);
      const searched = new ByteOut();
      const fed = new ByteOut();
      const a = new ChunkBytes().rewrite(read, start, end, ID, MODEL, searched);
      const b = new ChunkBytes().rewrite(read, start, end, ID, MODEL, fed, scan);
      expect(b, data).toBe(a);
      expect(fed.take().toString('utf8'), data).toBe(searched.take().toString('utf8'));
    }
  });
});
