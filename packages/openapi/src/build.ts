/**
 * `pnpm --filter @tollgate/openapi build`: regenerates openapi.json from openapi.yaml (formatted by
 * biome, so `pnpm lint` stays clean). `--check`: exits 1 when openapi.json does not describe the
 * same document as openapi.yaml.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { compileOpenapi } from './compile';
import { openapiJsonPath, openapiYamlPath } from './paths';

const json = compileOpenapi(readFileSync(openapiYamlPath, 'utf8'));
if (process.argv.includes('--check')) {
  if (!isDeepStrictEqual(JSON.parse(readFileSync(openapiJsonPath, 'utf8')), JSON.parse(json))) {
    console.error('openapi.json is out of date: run `pnpm --filter @tollgate/openapi build`');
    process.exit(1);
  }
  console.log('openapi.json is up to date');
} else {
  let formatted = json;
  try {
    formatted = execFileSync('biome', ['format', `--stdin-file-path=${openapiJsonPath}`], {
      input: json,
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'ignore'],
    });
  } catch {
    console.warn('biome is not available: writing unformatted JSON');
  }
  writeFileSync(openapiJsonPath, formatted);
  console.log(`wrote ${openapiJsonPath}`);
}
