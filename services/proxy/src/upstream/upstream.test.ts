import { afterAll, describe, expect, it } from 'vitest';
import { ownedBytes, Upstreams } from './upstream';

const upstreams = new Upstreams({ timeoutMs: 1_000 });
afterAll(() => upstreams.close());

describe('Upstreams.target by wire format', () => {
  it('OpenAI format: <base path>/chat/completions with a Bearer key', () => {
    const t = upstreams.target(
      { name: 'o', baseUrl: 'https://api.example.com/v1', format: 'openai' },
      'sk-1',
    );
    expect(t.path).toBe('/v1/chat/completions');
    expect(t.headers.authorization).toBe('Bearer sk-1');
    expect(t.headers['x-api-key']).toBeUndefined();
  });

  it('Anthropic format: <base path>/messages with x-api-key and anthropic-version, no Bearer', () => {
    const t = upstreams.target(
      { name: 'a', baseUrl: 'https://api.anthropic.com/v1', format: 'anthropic' },
      'sk-ant-1',
    );
    expect(t.path).toBe('/v1/messages');
    expect(t.headers['x-api-key']).toBe('sk-ant-1');
    expect(t.headers['anthropic-version']).toBe('2023-06-01');
    expect(t.headers.authorization).toBeUndefined();
    // One pool per origin, one target per key.
    const other = upstreams.target(
      { name: 'a', baseUrl: 'https://api.anthropic.com/v1', format: 'anthropic' },
      'sk-ant-2',
    );
    expect(other.pool).toBe(t.pool);
    expect(other.headers['x-api-key']).toBe('sk-ant-2');
  });
});

describe('ownedBytes', () => {
  it('encodes a body as UTF-8 in a buffer of exactly its size, not a slice of the shared pool', () => {
    const text = '{"model":"m","messages":[{"role":"user","content":"héllo ✓"}]}';
    const bytes = ownedBytes(text);
    expect(bytes.toString('utf8')).toBe(text);
    expect(bytes.byteLength).toBe(Buffer.byteLength(text));
    // A pooled Buffer.from of the same text lives in a Buffer.poolSize slab.
    expect(bytes.buffer.byteLength).toBe(bytes.byteLength);
    expect(bytes.byteOffset).toBe(0);
    expect(Buffer.from(text).buffer.byteLength).toBe(Buffer.poolSize);
    expect(ownedBytes('').byteLength).toBe(0);
  });
});
