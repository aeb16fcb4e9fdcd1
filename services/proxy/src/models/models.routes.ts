import { type Catalog, toModelsEntry } from '@tollgate/catalog';
import type { RequestHandler } from 'express';

/** GET /models: the catalog in DESIGN.md's shape, serialised once at start. */
export function modelsHandler(catalog: Catalog): RequestHandler {
  const body = Buffer.from(JSON.stringify({ data: catalog.models().map(toModelsEntry) }));
  return (_req, res) => {
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('content-length', body.length);
    res.end(body);
  };
}
