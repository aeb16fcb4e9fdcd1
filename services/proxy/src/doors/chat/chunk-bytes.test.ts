import { describe, expect, it } from 'vitest';
import { ByteOut } from './byte-out';
import { ChunkBytes, ChunkRewriter, NOT_JSON, rewriteChunk, stripNullUsage } from './chunk';

const ID = 'gen-1700000000-abcdefghijklmnopqrst';
const MODEL = 'vendor/model';

/** The string path of the relay: `data: <rewriteChunk(stripNullUsage(data))>\n\n` (null: not JSON). */
function viaStrings(data: string): string | null {
  const r = rewriteChunk(stripNullUsage(data), ID, MODEL);
  return r === null ? null : `data: ${r.text}\n\n`;
}

/** The byte path on `data` placed inside a larger read; null when it declines (string path). */
function viaBytes(data: string, bytes = new ChunkBytes()): { text: string; upstreamId: string } | null {
  const before = Buffer.from('data: {"id":"previous","model":"x"}\n\ndata: ');
  const read = Buffer.concat([
    before,
    Buffer.from(data),
    Buffer.from('\n\ndata: {"id":"next","usage":null}\n\n'),
  ]);
  const out = new ByteOut();
  const start = before.length;
  const ok = bytes.rewrite(read, start, start + Buffer.byteLength(data), ID, MODEL, out);
  if (!ok) {
    expect(out.length).toBe(0);
    return null;
  }
  return { text: out.take().toString('utf8'), upstreamId: read.toString('utf8', bytes.idStart, bytes.idEnd) };
}

describe('ChunkBytes (the relay rewrite on the provider bytes)', () => {
  const content =
    '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"up-model","choices":[{"index":0,"delta":{"content":"\\"id\\":\\"x\\" \\"usage\\":null é"},"finish_reason":null}]}';

  it('rewrites id and model from the bytes, content untouched, and names the provider id', () => {
    const r = viaBytes(content);
    expect(r?.upstreamId).toBe('chatcmpl-1');
    expect(r?.text).toBe(viaStrings(content));
    const parsed = JSON.parse(r!.text.slice('data: '.length));
    expect(parsed.id).toBe(ID);
    expect(parsed.model).toBe(MODEL);
    expect(parsed.choices).toEqual(JSON.parse(content).choices);
  });

  it('strips "usage":null wherever it sits, as the string path does', () => {
    const atEnd = '{"id":"c1","model":"m","choices":[],"usage":null}';
    const inMiddle = '{"id":"c1","usage":null,"model":"m","choices":[]}';
    const beforeModel = '{"id":"c1","object":"x","usage":null,"model":"m"}';
    for (const data of [atEnd, inMiddle, beforeModel]) {
      const r = viaBytes(data);
      expect(r?.text, data).toBe(viaStrings(data));
      expect(JSON.parse(r!.text.slice(6))).not.toHaveProperty('usage');
    }
  });

  it('declines what only the string path handles: other layouts, spaces, escapes, odd usage', () => {
    for (const data of [
      '{ "id": "c1", "model": "m" }',
      '{"object":"x","id":"c1"}',
      '{"id":"a\\"b","model":"m"}',
      '{"id":"c1","usage" : null,"model":"m"}',
      '{"id":"c1","model":"m", "usage":null}',
      '{"id":"c1","model":"m","usage":null }',
      '{"id":"c1","usage":{"prompt_tokens":1}}',
      '{"id":"c1"usage":null,"model":"m"}',
      'not json',
      '{"id":"unterminated',
    ]) {
      expect(viaBytes(data), data).toBeNull();
    }
  });

  it('leaves a model value with escapes alone, as the string path does', () => {
    const data = '{"id":"c1","model":"a\\"b","choices":[]}';
    expect(viaBytes(data)?.text).toBe(viaStrings(data));
  });

  it('gives the string path text for generated chunks, key positions remembered across a read', () => {
    const shapes = [
      (i: number) =>
        `{"id":"c${i}","object":"chat.completion.chunk","created":1,"model":"m${i}","choices":[{"index":0,"delta":{"content":"t${i}"},"finish_reason":null}]}`,
      (i: number) => `{"id":"c${i}","choices":[{"delta":{"content":"model ${i}"}}],"usage":null}`,
      (i: number) =>
        `{"id":"c${i}","usage":null,"choices":[{"delta":{"content":"\\"model\\":\\"x\\""}}],"model":"mm"}`,
      (i: number) => `{"id":"c${i}","choices":[]}`,
    ];
    // Many chunks in one read, in order, through one ChunkBytes: keys a chunk lacks are found later.
    const datas = Array.from({ length: 40 }, (_, i) =>
      (shapes[(i * 7) % shapes.length] as (i: number) => string)(i),
    );
    const read = Buffer.from(datas.map((d) => `data: ${d}\n\n`).join(''));
    const bytes = new ChunkBytes();
    const out = new ByteOut();
    let at = 0;
    for (const d of datas) {
      const start = read.indexOf('data: ', at) + 6;
      const end = start + Buffer.byteLength(d);
      expect(bytes.rewrite(read, start, end, ID, MODEL, out), d).toBe(true);
      expect(out.take().toString('utf8'), d).toBe(viaStrings(d));
      at = end;
    }
  });
});

describe('ByteOut', () => {
  it('joins ranges and strings (UTF-8) into one buffer and starts over', () => {
    const out = new ByteOut();
    out.bytes(Buffer.from('xxabcxx'), 2, 5);
    out.text('é€');
    out.bytes(Buffer.from('!'));
    out.text('');
    expect(out.length).toBe(3 + 5 + 1);
    expect(out.take().toString('utf8')).toBe('abcé€!');
    expect(out.length).toBe(0);
    expect(out.take().length).toBe(0);
  });
});

describe('ByteOut.takeChunk', () => {
  it('frames the pieces as one HTTP/1.1 chunk: size in hex, CRLF, bytes, CRLF', () => {
    const out = new ByteOut();
    for (const n of [1, 9, 10, 15, 16, 17, 255, 256, 300, 4095, 4096, 65_535, 70_000]) {
      const body = Buffer.alloc(n, 'é'.repeat(n));
      out.bytes(Buffer.concat([Buffer.from('xx'), body]), 2, n + 2);
      const chunk = out.takeChunk();
      expect(chunk.toString('latin1'), String(n)).toBe(`${n.toString(16)}\r\n${body.toString('latin1')}\r\n`);
      out.ascii('gen-123');
      out.text('é');
      out.whole(Buffer.from(' tail'));
      expect(out.takeChunk().toString('utf8')).toBe('e\r\ngen-123é tail\r\n');
    }
  });

  it('puts a response head that has not left yet in front of the chunk, in the same buffer', () => {
    const out = new ByteOut();
    const head = 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n';
    out.text('data: é\n\n');
    expect(out.takeChunk(head).toString('utf8')).toBe(`${head}a\r\ndata: é\n\n\r\n`);
    out.ascii('x');
    expect(out.takeChunk('').toString('latin1')).toBe('1\r\nx\r\n');
  });
});

describe('ChunkRewriter (the one rewriter: byte path, else string path)', () => {
  const rewrite = (data: string, asciiId = true, wantId = true) => {
    const out = new ByteOut();
    const read = Buffer.from(`data: ${data}\n\n`);
    const id = asciiId ? ID : 'gen-é';
    const r = new ChunkRewriter().content(
      read,
      6,
      read.length - 2,
      data,
      { id, model: MODEL, asciiId },
      wantId,
      out,
    );
    return { upstreamId: r, text: out.take().toString('utf8') };
  };

  it('gives the same event on both paths, with the provider id when asked', () => {
    const data = '{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[],"usage":null}';
    const viaByte = rewrite(data);
    expect(viaByte).toEqual({ upstreamId: 'c1', text: viaStrings(data) });
    // A layout only the string path takes: same text.
    const spaced = '{ "id": "c1", "model": "m", "usage" : null }';
    expect(rewrite(spaced)).toEqual({ upstreamId: 'c1', text: viaStrings(spaced) });
    // A non-ASCII request id never takes the byte path.
    expect(JSON.parse(rewrite(data, false).text.slice(6)).id).toBe('gen-é');
    expect(rewrite(data, true, false).upstreamId).toBeNull();
  });

  it('relays what is not JSON as it came, one data line per line', () => {
    expect(rewrite('not json\nsecond')).toEqual({
      upstreamId: NOT_JSON,
      text: 'data: not json\ndata: second\n\n',
    });
  });

  it('rewrites the content part of a usage chunk without its usage', () => {
    const text = new ChunkRewriter().usageContent(
      { id: 'c1', model: 'm', choices: [{ index: 0 }], usage: { prompt_tokens: 1 } },
      ID,
      MODEL,
    );
    expect(JSON.parse(text)).toEqual({ id: ID, model: MODEL, choices: [{ index: 0 }] });
  });
});
