import { describe, expect, it } from 'vitest';
import { loadConfig } from './config';

describe('provider-sim config', () => {
  it('defaults to port 8090, no delays and no API key', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ PORT: 8090, HOST: '0.0.0.0', SIM_TTFT_MS: 0, SIM_INTER_TOKEN_MS: 0 });
    expect(c.SIM_API_KEY).toBeUndefined();
    expect(c.SIM_MODELS).toBeUndefined();
  });

  it('reads delays, key and model list from the environment', () => {
    const c = loadConfig({
      PORT: '9001',
      SIM_TTFT_MS: '250',
      SIM_INTER_TOKEN_MS: '20',
      SIM_API_KEY: 'sk-upstream',
      SIM_MODELS: 'a, b ,,c',
    });
    expect(c).toMatchObject({
      PORT: 9001,
      SIM_TTFT_MS: 250,
      SIM_INTER_TOKEN_MS: 20,
      SIM_API_KEY: 'sk-upstream',
    });
    expect(c.SIM_MODELS).toEqual(['a', 'b', 'c']);
  });

  it('reads SIM_STRICT as a boolean (default false)', () => {
    expect(loadConfig({}).SIM_STRICT).toBe(false);
    expect(loadConfig({ SIM_STRICT: 'true' }).SIM_STRICT).toBe(true);
    expect(() => loadConfig({ SIM_STRICT: 'yes please' })).toThrow(/SIM_STRICT/);
  });

  it('treats an empty SIM_API_KEY as unset', () => {
    expect(loadConfig({ SIM_API_KEY: '' }).SIM_API_KEY).toBeUndefined();
  });

  it('rejects negative or non-numeric delays naming the variable', () => {
    expect(() => loadConfig({ SIM_TTFT_MS: '-1' })).toThrow(/SIM_TTFT_MS/);
    expect(() => loadConfig({ SIM_INTER_TOKEN_MS: 'fast' })).toThrow(/SIM_INTER_TOKEN_MS/);
    expect(() => loadConfig({ PORT: '70000' })).toThrow(/PORT/);
  });
});
