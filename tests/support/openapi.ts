/**
 * Checks real responses against the OpenAPI document (ajv, JSON Schema 2020-12 as OpenAPI 3.1 uses).
 *
 * Strict by default: an object schema that does not say `additionalProperties` gets
 * `additionalProperties: false` here, so a field the implementation returns but the document does not
 * describe fails the check (objects that pass provider fields through say `additionalProperties: true`
 * in the document).
 */
import { type HttpMethod, type JsonSchema, type OpenApiOperation, openapiDocument } from '@tollgate/openapi';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';

const ROOT_ID = 'urn:tollgate:openapi';
const COMPONENT_REF = /^#\/components\/schemas\//;

const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'dependentSchemas'] as const;
const SUBSCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'] as const;
const SUBSCHEMA_SINGLE = [
  'items',
  'additionalProperties',
  'unevaluatedProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
] as const;

/** Deep copy of a schema with component refs pointed at the registered root and (optionally) closed objects. */
export function prepareSchema(schema: unknown, strict: boolean): JsonSchema {
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (!node || typeof node !== 'object') return node;
    const src = node as JsonSchema;
    const out: JsonSchema = {};
    for (const [k, v] of Object.entries(src)) {
      if (k === '$ref' && typeof v === 'string') out[k] = v.replace(COMPONENT_REF, `${ROOT_ID}#/$defs/`);
      else if ((SUBSCHEMA_MAPS as readonly string[]).includes(k) && v && typeof v === 'object')
        out[k] = Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, walk(sub)]));
      else if ((SUBSCHEMA_LISTS as readonly string[]).includes(k) && Array.isArray(v)) out[k] = v.map(walk);
      else if ((SUBSCHEMA_SINGLE as readonly string[]).includes(k)) out[k] = walk(v);
      else out[k] = v;
    }
    const isObjectSchema = src.type === 'object' || (src.properties !== undefined && src.type === undefined);
    if (strict && isObjectSchema && !('additionalProperties' in src) && !('unevaluatedProperties' in src)) {
      out.additionalProperties = false;
    }
    return out;
  };
  return walk(schema) as JsonSchema;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export function createAjv(strictObjects = true): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, strictTypes: false, allErrors: true, validateFormats: true });
  ajv.addFormat('uuid', UUID);
  ajv.addFormat('date-time', { validate: (s: string) => DATE_TIME.test(s) && !Number.isNaN(Date.parse(s)) });
  ajv.addKeyword({ keyword: 'x-item-schema' });
  const defs = Object.entries(openapiDocument.components.schemas).map(([name, schema]) => [
    name,
    prepareSchema(schema, strictObjects),
  ]);
  ajv.addSchema({ $id: ROOT_ID, $defs: Object.fromEntries(defs) });
  return ajv;
}

const METHODS: HttpMethod[] = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

export interface DocumentedOperation {
  method: HttpMethod;
  path: string;
  operation: OpenApiOperation;
}

export function documentedOperations(): DocumentedOperation[] {
  return Object.entries(openapiDocument.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ method, path, operation: item[method]! })),
  );
}

export function findOperation(method: string, path: string): OpenApiOperation {
  const op = openapiDocument.paths[path]?.[method.toLowerCase() as HttpMethod];
  if (!op) throw new Error(`${method.toUpperCase()} ${path} is not in the OpenAPI document`);
  return op;
}

/** Follows a `#/components/...` reference inside the document. */
export function deref<T = Record<string, unknown>>(value: unknown): T {
  let node = value as { $ref?: string };
  for (let i = 0; node && typeof node === 'object' && typeof node.$ref === 'string' && i < 10; i++) {
    const pointer = node.$ref.replace(/^#\//, '').split('/');
    // biome-ignore lint/suspicious/noExplicitAny: walking a JSON document
    let target: any = openapiDocument;
    for (const part of pointer) target = target?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    if (target === undefined) throw new Error(`unresolvable $ref ${node.$ref}`);
    node = target;
  }
  return node as T;
}

interface ResponseObject {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: unknown; 'x-item-schema'?: unknown }>;
}

/** The documented response of an operation for a status (no fallback to `default`). */
export function documentedResponse(method: string, path: string, status: number): ResponseObject | undefined {
  const responses = findOperation(method, path).responses;
  const r = responses[String(status)] ?? responses[`${String(status)[0]}XX`];
  return r === undefined ? undefined : deref<ResponseObject>(r);
}

export class ResponseChecker {
  private readonly ajv = createAjv(true);
  private readonly cache = new Map<string, ValidateFunction>();
  /** operationId → statuses seen */
  readonly seen = new Map<string, Set<string>>();

  private compile(key: string, schema: unknown): ValidateFunction {
    let fn = this.cache.get(key);
    if (!fn) {
      fn = this.ajv.compile(prepareSchema(schema, true));
      this.cache.set(key, fn);
    }
    return fn;
  }

  /**
   * Errors (empty when the response conforms): the status is documented for the operation, the
   * content type is documented, the body matches the schema, required headers are present and every
   * documented header sent matches its schema.
   */
  check(
    method: string,
    path: string,
    res: { status: number; headers: Headers; body: unknown },
    options: { contentType?: string } = {},
  ): string[] {
    const op = findOperation(method, path);
    const status = String(res.status);
    const seen = this.seen.get(op.operationId) ?? new Set<string>();
    seen.add(status);
    this.seen.set(op.operationId, seen);

    const documented = documentedResponse(method, path, res.status);
    if (!documented) return [`${method.toUpperCase()} ${path}: status ${status} is not documented`];
    const contentType = options.contentType ?? (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
    const media = documented.content?.[contentType];
    if (!media)
      return [`${method.toUpperCase()} ${path} ${status}: content type "${contentType}" is not documented`];
    const errors: string[] = [];
    for (const [name, header] of Object.entries(documented.headers ?? {})) {
      const h = deref<{ required?: boolean; schema?: unknown }>(header);
      const value = res.headers.get(name);
      if (value === null) {
        if (h.required) errors.push(`header ${name} is missing`);
      } else if (h.schema) {
        const v = this.compile(`header:${method}:${path}:${status}:${name}`, h.schema);
        // A header is text: a numeric schema is checked against the number the text spells.
        const numeric = /^(integer|number)$/.test(String((h.schema as { type?: unknown }).type));
        const typed = numeric && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
        if (!v(typed)) errors.push(`header ${name}=${value}: ${this.ajv.errorsText(v.errors)}`);
      }
    }
    if (contentType === 'application/json' && media.schema) {
      const v = this.compile(`body:${method}:${path}:${status}:${contentType}`, media.schema);
      if (!v(res.body)) errors.push(`body: ${this.ajv.errorsText(v.errors, { separator: '\n  ' })}`);
    }
    return errors;
  }

  /** Validates a value against a named component schema (strict). */
  checkSchema(name: string, value: unknown): string[] {
    const v = this.compile(`component:${name}`, { $ref: `#/components/schemas/${name}` });
    return v(value) ? [] : [this.ajv.errorsText(v.errors, { separator: '\n  ' })];
  }
}

/** Splits an SSE body into its `data:` payloads (comments and blank lines dropped). */
export function sseData(text: string): string[] {
  return text
    .split(/\r?\n/)
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(5).trimStart());
}
