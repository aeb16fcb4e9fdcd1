/**
 * The size rule of the codebase (issue 24): no function longer than 150 lines and no file longer than
 * 400 lines in services/* /src, services/* /ui/src and packages/* /src — tests, fixtures, migrations,
 * test harness folders and benches aside. Part of `pnpm lint`: prints every violator (file:line and
 * its length) and fails when there is one outside ALLOWED.
 *
 *   node infra/build/sizes.ts            check the repository (exit 1 on a violation)
 *   node infra/build/sizes.ts --all      also list the allowlisted violators
 *
 * Functions are read with the TypeScript compiler (its syntax tree, no type checking): declarations,
 * function expressions, arrow functions, methods, constructors and accessors, React components
 * included. A function's length runs from its first token (its JSDoc aside) to its closing line; a
 * nested function counts in its parent too (a parent is long by what it holds).
 */
import { type Dirent, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { type Node, type SourceFile, SyntaxKind } from 'typescript/unstable/ast';
import { API } from 'typescript/unstable/sync';

export const MAX_FUNCTION_LINES = 150;
export const MAX_FILE_LINES = 400;

/**
 * Violators still being split, by `file` (the whole file's length) or `file#name` (a function).
 * Empty it, never grow it. Each entry names the helper who owns the area.
 */
const ALLOWED: ReadonlySet<string> = new Set<string>([]);

export interface Violation {
  file: string;
  line: number;
  /** The function's name (`<file>` for the file itself, `<anonymous>` when it has none). */
  name: string;
  lines: number;
  limit: number;
}

const ROOTS = ['services/*/src', 'services/*/ui/src', 'packages/*/src'];

/** Files the rule does not cover: tests, fixtures, migrations, test harness folders, benches. */
export function excluded(file: string): boolean {
  const parts = file.split('/');
  const base = parts[parts.length - 1] ?? '';
  return (
    /\.(test|spec)\.tsx?$/.test(base) ||
    /\.fixtures?\.tsx?$/.test(base) ||
    /\.d\.ts$/.test(base) ||
    parts.some((p) =>
      ['fixtures', 'migrations', 'test', 'tests', '__tests__', 'bench', 'benches'].includes(p),
    )
  );
}

/** The TypeScript sources the rule covers under `root`, relative to it. */
export function coveredFiles(root: string): string[] {
  const out: string[] = [];
  for (const pattern of ROOTS) {
    const [top, , ...rest] = pattern.split('/');
    const topDir = join(root, top as string);
    for (const entry of safeReaddir(topDir)) {
      const dir = join(topDir, entry, ...rest);
      for (const f of walk(dir)) {
        const rel = relative(root, f);
        if (/\.tsx?$/.test(rel) && !excluded(rel)) out.push(rel);
      }
    }
  }
  return out.sort();
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function* walk(dir: string): Generator<string> {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    if (e.name === 'node_modules' || e.name === 'dist') continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* walk(p);
    else yield p;
  }
}

const FUNCTION_KINDS = new Set<SyntaxKind>([
  SyntaxKind.FunctionDeclaration,
  SyntaxKind.FunctionExpression,
  SyntaxKind.ArrowFunction,
  SyntaxKind.MethodDeclaration,
  SyntaxKind.Constructor,
  SyntaxKind.GetAccessor,
  SyntaxKind.SetAccessor,
]);

/** A function's name: its own, or the variable, property or class member it is assigned to. */
function nameOf(node: Node): string {
  const own = (node as { name?: { text?: string } }).name?.text;
  if (own) return own;
  if (node.kind === SyntaxKind.Constructor) return 'constructor';
  const parent = node.parent as (Node & { name?: { text?: string } }) | undefined;
  if (
    parent &&
    (parent.kind === SyntaxKind.VariableDeclaration ||
      parent.kind === SyntaxKind.PropertyAssignment ||
      parent.kind === SyntaxKind.PropertyDeclaration)
  )
    return parent.name?.text ?? '<anonymous>';
  return '<anonymous>';
}

/** The violations of one parsed file (`file` is the name reported). */
export function measureSource(file: string, sf: SourceFile, text: string): Violation[] {
  const out: Violation[] = [];
  const fileLines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
  if (fileLines > MAX_FILE_LINES)
    out.push({ file, line: 1, name: '<file>', lines: fileLines, limit: MAX_FILE_LINES });
  const visit = (node: Node): void => {
    if (FUNCTION_KINDS.has(node.kind)) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.end).line;
      const lines = end - start + 1;
      if (lines > MAX_FUNCTION_LINES)
        out.push({ file, line: start + 1, name: nameOf(node), lines, limit: MAX_FUNCTION_LINES });
    }
    node.forEachChild(visit);
  };
  sf.forEachChild(visit);
  return out;
}

/**
 * Parses `files` (absolute paths) with the TypeScript compiler in a project of their own (no lib, no
 * import resolution: syntax only) and measures each. `name` maps a path to the name reported.
 */
export function measureFiles(
  files: readonly string[],
  name: (path: string) => string = (p) => p,
): Violation[] {
  if (files.length === 0) return [];
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-sizes-'));
  const config = join(dir, 'tsconfig.json');
  writeFileSync(
    config,
    JSON.stringify({
      compilerOptions: { noLib: true, noResolve: true, types: [], jsx: 'preserve', noEmit: true },
      files: files.map((f) => resolve(f)),
    }),
  );
  const api = new API({ cwd: dir });
  try {
    const project = api.updateSnapshot({ openProjects: [config] }).getProjects()[0];
    if (!project) throw new Error('sizes: the TypeScript API opened no project');
    const out: Violation[] = [];
    for (const f of files) {
      const path = resolve(f);
      const sf = project.program.getSourceFile(path);
      if (!sf) throw new Error(`sizes: TypeScript did not parse ${path}`);
      out.push(...measureSource(name(path), sf, readFileSync(path, 'utf8')));
    }
    return out;
  } finally {
    api.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The allowlist key of a violation: the file for a file's length, `file#name` for a function. */
export const allowKey = (v: Violation) => (v.name === '<file>' ? v.file : `${v.file}#${v.name}`);

/** Checks the repository at `root`: the violations, split into those allowlisted and the rest. */
export function checkRepository(root: string, allowed: ReadonlySet<string> = ALLOWED) {
  const files = coveredFiles(root);
  const all = measureFiles(
    files.map((f) => join(root, f)),
    (p) => relative(root, p),
  );
  return {
    files: files.length,
    violations: all.filter((v) => !allowed.has(allowKey(v))),
    allowlisted: all.filter((v) => allowed.has(allowKey(v))),
    /** Allowlist entries that no longer match anything (split already): remove them. */
    stale: [...allowed].filter((k) => !all.some((v) => allowKey(v) === k)),
  };
}

const format = (v: Violation) =>
  `${v.file}:${v.line}  ${v.name === '<file>' ? 'file' : `function ${v.name}`}  ${v.lines} lines (max ${v.limit})`;

function main() {
  const root = resolve(import.meta.dirname, '../..');
  const result = checkRepository(root);
  for (const v of result.violations) console.error(`too long: ${format(v)}`);
  if (process.argv.includes('--all'))
    for (const v of result.allowlisted) console.log(`allowlisted: ${format(v)}`);
  for (const k of result.stale) console.error(`sizes: allowlist entry ${k} matches nothing: remove it`);
  console.log(
    `sizes: ${result.files} files, ${result.violations.length} violation(s), ${result.allowlisted.length} allowlisted`,
  );
  if (result.violations.length > 0 || result.stale.length > 0) process.exitCode = 1;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) main();
