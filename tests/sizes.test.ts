import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkRepository, coveredFiles, excluded, measureFiles } from '../infra/build/sizes';

/** The size checker of `pnpm lint` (infra/build/sizes.ts) on files written for the test. */
const root = mkdtempSync(join(tmpdir(), 'sizes-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Writes `rel` under the test root and returns its absolute path. */
function file(rel: string, text: string): string {
  const path = join(root, rel);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
}
/** A body of `n` lines in total, braces included: `n - 2` statements. */
const body = (n: number) =>
  `{\n${Array.from({ length: n - 2 }, (_, i) => `  const v${i} = ${i};`).join('\n')}\n}`;

describe('size checker', () => {
  it('reports a function of 151 lines with its line and length, and not one of 150', () => {
    const path = file(
      'a.ts',
      `/** doc */\nexport function long() ${body(151)}\n\nexport function fine() ${body(150)}\n`,
    );
    expect(measureFiles([path], () => 'a.ts')).toEqual([
      { file: 'a.ts', line: 2, name: 'long', lines: 151, limit: 150 },
    ]);
  });

  it('measures arrow functions, function expressions, methods and React components by their names', () => {
    const path = file(
      'b.tsx',
      [
        `export const arrow = () => ${body(151)};`,
        `export const expr = function () ${body(151)};`,
        `export class K { method() ${body(151)} }`,
        `export const routes = { handler: async () => ${body(151)} };`,
        `export function Page() { return (<div>\n${'<p>x</p>\n'.repeat(150)}</div>); }`,
      ].join('\n'),
    );
    expect(measureFiles([path]).map((v) => v.name)).toEqual([
      '<file>',
      'arrow',
      'expr',
      'method',
      'handler',
      'Page',
    ]);
  });

  it('counts an inner function in its parent too', () => {
    const path = file(
      'c.ts',
      `export function outer() {\n  const inner = () => ${body(150)};\n  return inner;\n}\n`,
    );
    expect(measureFiles([path]).map((v) => `${v.name}:${v.lines}`)).toEqual(['outer:153']);
  });

  it('reports a file over 400 lines', () => {
    const path = file('d.ts', 'export const x = 1;\n'.repeat(401));
    expect(measureFiles([path])).toEqual([{ file: path, line: 1, name: '<file>', lines: 401, limit: 400 }]);
    expect(measureFiles([file('e.ts', 'export const x = 1;\n'.repeat(400))])).toEqual([]);
  });

  it('covers services/*/src, services/*/ui/src and packages/*/src, leaving tests, fixtures, migrations and benches aside', () => {
    for (const rel of [
      'services/s/src/a.ts',
      'services/s/ui/src/App.tsx',
      'packages/p/src/b.ts',
      'packages/p/src/b.test.ts',
      'packages/p/src/x.fixture.ts',
      'services/s/src/fixtures/f.ts',
      'services/s/migrations/001.ts',
      'services/s/src/test/harness.ts',
      'packages/p/bench/b.ts',
      'tests/e2e/x.ts',
    ])
      file(rel, 'export {};\n');
    expect(coveredFiles(root)).toEqual([
      'packages/p/src/b.ts',
      'services/s/src/a.ts',
      'services/s/ui/src/App.tsx',
    ]);
    expect(excluded('services/s/src/a.e2e.test.ts')).toBe(true);
  });

  it('fails on a violation outside the allowlist, and on an allowlist entry that matches nothing', () => {
    file('packages/p/src/long.ts', `export function big() ${body(200)}\n`);
    const strict = checkRepository(root, new Set());
    expect(strict.violations.map((v) => `${v.file}#${v.name}`)).toEqual(['packages/p/src/long.ts#big']);
    const allowed = checkRepository(root, new Set(['packages/p/src/long.ts#big', 'packages/p/src/gone.ts']));
    expect(allowed.violations).toEqual([]);
    expect(allowed.stale).toEqual(['packages/p/src/gone.ts']);
  });
});
