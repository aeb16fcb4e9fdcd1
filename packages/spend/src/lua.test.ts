import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadLua } from './lua';
import { scripts } from './scripts';

describe('loadLua (the spend scripts, read from packages/spend/lua at start-up)', () => {
  const dir = `${mkdtempSync(join(tmpdir(), 'tollgate-lua-'))}/`;
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('drops the leading comment block and splices includes in place (indent of the first line kept)', () => {
    writeFileSync(`${dir}helper.lua`, '-- doc of the helper\nlocal a = 1\nlocal b = 2\n');
    writeFileSync(
      `${dir}main.lua`,
      '-- doc line 1\n-- doc line 2\n--#include helper\nif x then\n  --#include helper\nend\n-- a comment in the body stays\nreturn a\n',
    );
    expect(loadLua('main', dir)).toBe(
      'local a = 1\nlocal b = 2\nif x then\n  local a = 1\nlocal b = 2\nend\n-- a comment in the body stays\nreturn a\n',
    );
  });

  it('gives every script its source with every include resolved', () => {
    for (const [name, script] of Object.entries(scripts)) {
      expect(script.source, name).not.toMatch(/--#include/);
      expect(script.source.trim().length, name).toBeGreaterThan(0);
      expect(script.sha, name).toMatch(/^[0-9a-f]{40}$/);
    }
    // admit uses the arithmetic and the hold helpers, each defined once; settle the arithmetic only.
    expect(scripts.admit.source.match(/local function add\(/g)).toHaveLength(1);
    expect(scripts.admit.source.match(/local function gc\(/g)).toHaveLength(1);
    expect(scripts.settle.source).toContain('local function add(');
    expect(scripts.settle.source).not.toContain('local function gc(');
    expect(scripts.settle.source).toContain("if #dels > 0 then redis.call('HDEL', h, unpack(dels)) end");
  });
});
