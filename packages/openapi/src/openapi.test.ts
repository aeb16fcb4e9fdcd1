import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compileOpenapi } from './compile';
import { openapiDocument, openapiJson, openapiYamlPath } from './index';

describe('@tollgate/openapi', () => {
  it('ships openapi.json generated from openapi.yaml (run `pnpm --filter @tollgate/openapi build`)', () => {
    const fromYaml = JSON.parse(compileOpenapi(readFileSync(openapiYamlPath, 'utf8')));
    expect(JSON.parse(openapiJson)).toEqual(fromYaml);
  });

  it('exports the parsed document and the exact JSON text', () => {
    expect(openapiDocument.openapi).toMatch(/^3\.1\.\d+$/);
    expect(JSON.parse(openapiJson)).toEqual(openapiDocument);
    expect(Object.isFrozen(openapiDocument.paths)).toBe(true);
  });

  it('expands YAML anchors so the JSON has no merge keys', () => {
    expect(openapiJson).not.toContain('"<<"');
    expect(openapiDocument.components.schemas.KeyWithSecret).toMatchObject({
      properties: { hash: { format: 'uuid' }, key: { type: 'string' } },
    });
  });
});
