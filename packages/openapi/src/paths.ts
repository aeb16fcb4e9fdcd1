import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * `packages/openapi/<name>` from the sources; from a service's production bundle (`dist/main.js`, which
 * compiles this module in) the copy the build puts beside the bundle (see infra/build/build.ts).
 */
function asset(name: string): string {
  const beside = fileURLToPath(new URL(`./${name}`, import.meta.url));
  return existsSync(beside) ? beside : fileURLToPath(new URL(`../${name}`, import.meta.url));
}

export const openapiJsonPath = asset('openapi.json');
export const openapiYamlPath = asset('openapi.yaml');
