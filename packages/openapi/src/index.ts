/**
 * The OpenAPI 3.1 document of Tollgate's public API (`openapi.json`, generated from `openapi.yaml`).
 * The proxy serves `openapiJson` at `/api/v1/openapi.json` and `/v1/openapi.json`.
 */
import { readFileSync } from 'node:fs';
import { openapiJsonPath } from './paths';

export { openapiJsonPath, openapiYamlPath } from './paths';

export type JsonSchema = { [keyword: string]: unknown };

export interface OpenApiOperation {
  operationId: string;
  summary?: string;
  description?: string;
  tags?: string[];
  security?: Array<Record<string, string[]>>;
  parameters?: unknown[];
  requestBody?: unknown;
  responses: Record<string, unknown>;
  'x-required-scope'?: 'inference' | 'management' | 'any' | 'none';
  /** `anthropic`: the operation's errors are Anthropic's shape (`AnthropicError`), not the envelope. */
  'x-error-shape'?: 'anthropic';
}

export type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch' | 'trace';

export type OpenApiPathItem = { parameters?: unknown[] } & Partial<Record<HttpMethod, OpenApiOperation>>;

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; [key: string]: unknown };
  servers: Array<{ url: string; description?: string }>;
  paths: Record<string, OpenApiPathItem>;
  components: {
    schemas: Record<string, JsonSchema>;
    responses: Record<string, unknown>;
    parameters: Record<string, unknown>;
    headers: Record<string, unknown>;
    securitySchemes: Record<string, unknown>;
  };
  [key: string]: unknown;
}

/** The document as served: the exact bytes of `openapi.json`. */
export const openapiJson: string = readFileSync(openapiJsonPath, 'utf8');

/** The parsed document (treat as read-only; it is frozen). */
export const openapiDocument: OpenApiDocument = deepFreeze(JSON.parse(openapiJson) as OpenApiDocument);

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
