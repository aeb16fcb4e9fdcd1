import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MALLOC_ARENA_MAX, processSettings, SEMI_SPACE_FLAG, SEMI_SPACE_MB } from './runtime';

describe('proxy process settings (issue 11: RSS at open streams)', () => {
  it('adds the semi-space flag and the arena limit when the operator set neither', () => {
    expect(processSettings({ execArgv: ['--enable-source-maps'], env: {} })).toEqual({
      execArgv: ['--enable-source-maps', `${SEMI_SPACE_FLAG}=${SEMI_SPACE_MB}`],
      env: { MALLOC_ARENA_MAX },
    });
  });

  it('keeps what the operator set: the flag on the command line or in NODE_OPTIONS, the variable', () => {
    for (const given of [
      { execArgv: ['--max-semi-space-size=64'], env: {} },
      { execArgv: ['--max_semi_space_size=8'], env: {} },
      { execArgv: [], env: { NODE_OPTIONS: '--enable-source-maps --max-semi-space-size=16' } },
    ])
      expect(processSettings(given).execArgv).toEqual(given.execArgv);
    expect(processSettings({ execArgv: [], env: { MALLOC_ARENA_MAX: '8' } }).env).toEqual({});
    // Another flag that merely starts alike is not this one.
    expect(processSettings({ execArgv: ['--max-semi-space-sizes=1'], env: {} }).execArgv).toContain(
      `${SEMI_SPACE_FLAG}=${SEMI_SPACE_MB}`,
    );
  });

  it('is what the Docker image runs with', () => {
    const dockerfile = readFileSync(new URL('../../../Dockerfile', import.meta.url), 'utf8');
    // The proxy's stage of the one Dockerfile (SERVICE=proxy), up to the next stage.
    const start = dockerfile.indexOf('AS service-proxy');
    const runtime = dockerfile.slice(start, dockerfile.indexOf('\nFROM ', start));
    const env = new Map(
      [...runtime.matchAll(/^\s+([A-Z_]+)=(\S+?)( \\)?$/gm)].map((m) => [m[1] as string, m[2] as string]),
    );
    const image = { execArgv: [], env: Object.fromEntries(env) };
    expect(env.get('NODE_OPTIONS')).toBe(`${SEMI_SPACE_FLAG}=${SEMI_SPACE_MB}`);
    expect(env.get('MALLOC_ARENA_MAX')).toBe(MALLOC_ARENA_MAX);
    // Nothing left for a cluster primary to add.
    expect(processSettings(image)).toEqual({ execArgv: [], env: {} });
  });
});
