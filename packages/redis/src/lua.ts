import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The Lua scripts' folder of the package whose module is `moduleUrl` (its `import.meta.url`):
 * `packages/<package>/lua/` from the sources; from a service's production bundle (`dist/main.js`,
 * which compiles the package in) the copy the build puts beside it, `dist/lua/` (infra/build/build.ts;
 * the packages' script names never collide there: the build refuses a second file of one name).
 */
export function luaDir(moduleUrl: string): string {
  const beside = fileURLToPath(new URL('./lua/', moduleUrl));
  return existsSync(beside) ? beside : fileURLToPath(new URL('../lua/', moduleUrl));
}

const INCLUDE = /^([ \t]*)--#include ([\w-]+)$/gm;

/**
 * The source of `<dir><name>.lua` as sent to Redis, read once at start-up: its leading comment block
 * (the documentation) dropped, and each `--#include <other>` line replaced by that file's source
 * (scripts share their helpers as text: a Lua function shared across scripts does not exist, each
 * call would re-create it).
 */
export function loadLua(name: string, dir: string): string {
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
