import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The Lua scripts' folder: `packages/spend/lua/` from the sources; from a service's production bundle
 * (`dist/main.js`, which compiles this module in) the copy the build puts beside it, `dist/lua/`
 * (infra/build/build.ts).
 */
function luaDir(): string {
  const beside = fileURLToPath(new URL('./lua/', import.meta.url));
  return existsSync(beside) ? beside : fileURLToPath(new URL('../lua/', import.meta.url));
}

const INCLUDE = /^([ \t]*)--#include ([\w-]+)$/gm;

/**
 * The source of `lua/<name>.lua` as sent to Redis: its leading comment block (the documentation)
 * dropped, and each `--#include <other>` line replaced by that file's source (scripts share their
 * helpers as text: a Lua function shared across scripts does not exist, each call would re-create it).
 */
export function loadLua(name: string, dir = luaDir()): string {
  const lines = readFileSync(`${dir}${name}.lua`, 'utf8').split('\n');
  let first = 0;
  while (first < lines.length && lines[first]?.startsWith('--') && !lines[first]?.startsWith('--#include'))
    first++;
  return lines
    .slice(first)
    .join('\n')
    .replace(
      INCLUDE,
      (_line, indent: string, other: string) => indent + loadLua(other, dir).replace(/\n+$/, ''),
    );
}
