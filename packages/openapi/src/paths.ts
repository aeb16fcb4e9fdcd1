import { fileURLToPath } from 'node:url';

export const openapiJsonPath = fileURLToPath(new URL('../openapi.json', import.meta.url));
export const openapiYamlPath = fileURLToPath(new URL('../openapi.yaml', import.meta.url));
