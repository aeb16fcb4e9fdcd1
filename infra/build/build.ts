/**
 * Production build of one or more services: `node infra/build/build.ts [service...]` (no names: every
 * service under services/ with a src/main.ts). Run by `pnpm build` (root or per service) and `make build`.
 *
 * Each entry point is bundled by esbuild into `services/<name>/dist/<entry>.js` (ESM, Node 24):
 * the workspace packages (`@tollgate/*`, TypeScript sources) are compiled into the bundle, every other
 * package stays an `import` resolved from the service's own `node_modules` at run time. The build fails
 * when the bundle imports a package that is not in the service's `dependencies`, so `pnpm deploy --prod`
 * (the Docker images) always carries what `node dist/main.js` needs — and nothing that is dev only (tsx).
 * It also fails when the bundle reaches another service's code or a test harness (a `test/` folder):
 * a service's production code is its own `src/` (and `migrations/`) plus the workspace packages.
 *
 * Plain TypeScript run by Node's type stripping: node builtins and esbuild only.
 */
import { copyFileSync, cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Entry points besides `src/main.ts` (dist name → source), when the source exists. */
const extraEntries: Record<string, string> = {
  migrate: 'src/migrate.ts',
  cli: 'src/cli/main.ts',
};

/**
 * Files (or folders) the bundled workspace code reads next to itself at run time (see
 * packages/openapi/src/paths.ts, packages/redis/src/lua.ts): copied beside the bundle under their name.
 */
const assets: Array<{ from: string; usedBy: string }> = [
  { from: 'packages/openapi/openapi.json', usedBy: '@tollgate/openapi' },
  { from: 'packages/openapi/openapi.yaml', usedBy: '@tollgate/openapi' },
  { from: 'packages/spend/lua', usedBy: '@tollgate/spend' },
  { from: 'packages/key-cache/lua', usedBy: '@tollgate/key-cache' },
];

interface BuildResult {
  metafile: {
    inputs: Record<string, unknown>;
    outputs: Record<string, { imports: Array<{ path: string; external?: boolean }> }>;
  };
}
interface Esbuild {
  build(options: Record<string, unknown>): Promise<BuildResult>;
}

/** Every service with an entry point: the build is generic, a new service needs no change here. */
export function listServices(): string[] {
  return readdirSync(join(root, 'services'), { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(root, 'services', d.name, 'src/main.ts')))
    .map((d) => d.name)
    .sort();
}

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? specifier);
}

const builtins = new Set(builtinModules);

export async function buildService(name: string): Promise<string[]> {
  const dir = join(root, 'services', name);
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  // esbuild is a devDependency of each service (resolved from the service, as in the Docker builder).
  const esbuild = createRequire(join(dir, 'package.json'))('esbuild') as Esbuild;
  const entryPoints: Record<string, string> = { main: join(dir, 'src/main.ts') };
  for (const [out, src] of Object.entries(extraEntries)) {
    if (existsSync(join(dir, src))) entryPoints[out] = join(dir, src);
  }
  const outdir = join(dir, 'dist');
  rmSync(outdir, { recursive: true, force: true });
  const result = await esbuild.build({
    entryPoints,
    outdir,
    bundle: true,
    platform: 'node',
    format: 'esm',
    // A dynamic import() becomes its own chunk (`dist/chunk-<hash>.js`) whose packages load only
    // when it runs: the proxy's cluster primary never loads the proxy (services/proxy/src/main.ts).
    splitting: true,
    target: 'node24',
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'warning',
    plugins: [
      {
        name: 'external-npm-packages',
        setup(build: { onResolve(o: { filter: RegExp }, cb: (a: { path: string }) => unknown): void }) {
          // Bare specifiers other than the workspace's own packages load from node_modules at run time.
          build.onResolve({ filter: /^[^./]/ }, (args) => {
            if (args.path.startsWith('@tollgate/')) return undefined;
            return { path: args.path, external: true };
          });
        },
      },
    ],
  });
  // Production code of one service never imports another service, nor a test harness (test/ folders).
  const serviceDir = join(root, 'services');
  const strays = Object.keys(result.metafile.inputs)
    .map((input) => resolve(input))
    .filter((file) => {
      const rel = relative(serviceDir, file);
      if (rel.startsWith('..')) return false; // a workspace package (packages/*) or node_modules
      const [owner, folder] = rel.split(sep);
      return owner !== name || (folder !== 'src' && folder !== 'migrations');
    });
  if (strays.length) {
    throw new Error(
      `services/${name}: the production bundle includes ${strays.map((f) => relative(root, f)).join(', ')} (another service's code or a test harness; only services/${name}/src, its migrations and packages/* may be bundled)`,
    );
  }
  const imported = new Set<string>();
  for (const output of Object.values(result.metafile.outputs)) {
    for (const imp of output.imports) {
      if (!imp.external || imp.path.startsWith('node:') || builtins.has(imp.path)) continue;
      imported.add(packageName(imp.path));
    }
  }
  const missing = [...imported].filter((p) => !manifest.dependencies?.[p]).sort();
  if (missing.length) {
    throw new Error(
      `services/${name}: the bundle imports ${missing.join(', ')} at run time but services/${name}/package.json does not list them in "dependencies" (a production image would lack them)`,
    );
  }
  // The other direction: a production dependency the bundle never needs is dead weight in the image
  // (and hides which packages a service really uses). Workspace packages count when bundled, `@types/x`
  // when `x` is imported; everything else must be imported by the bundle at run time.
  const bundledWorkspace = new Set(
    Object.keys(result.metafile.inputs)
      .map((input) => relative(join(root, 'packages'), resolve(input)).split(sep))
      .filter((parts) => parts[0] !== '..' && parts.length > 1)
      .map((parts) => `@tollgate/${parts[0]}`),
  );
  const typesOf = (dep: string) => {
    const base = dep.slice('@types/'.length);
    return base.includes('__') ? `@${base.replace('__', '/')}` : base;
  };
  const unused = Object.keys(manifest.dependencies ?? {})
    .filter((dep) => {
      if (dep.startsWith('@tollgate/')) return !bundledWorkspace.has(dep);
      if (dep.startsWith('@types/')) return !imported.has(typesOf(dep));
      return !imported.has(dep);
    })
    .sort();
  if (unused.length) {
    throw new Error(
      `services/${name}: package.json lists ${unused.join(', ')} in "dependencies" but the production bundle never uses them (move them to devDependencies, or remove them)`,
    );
  }
  const inputs = Object.keys(result.metafile.inputs).join('\n');
  for (const asset of assets) {
    if (inputs.includes(asset.usedBy.replace('@tollgate/', 'packages/'))) {
      const from = join(root, asset.from);
      const to = join(outdir, asset.from.split('/').pop() ?? asset.from);
      // Folders of one name merge (the packages' `lua/`): a file of one name twice fails the build.
      if (statSync(from).isDirectory())
        cpSync(from, to, { recursive: true, force: false, errorOnExist: true });
      else copyFileSync(from, to);
    }
  }
  return Object.keys(entryPoints).map((e) => `services/${name}/dist/${e}.js`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const requested = process.argv.slice(2);
  const names = requested.length ? requested : listServices();
  const started = Date.now();
  for (const name of names) {
    const outputs = await buildService(name);
    console.log(`built ${outputs.join(', ')}`);
  }
  console.log(`build done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
