import { type Catalog, type CatalogModel, toModelEndpoints, toModelsEntry } from '@tollgate/catalog';
import { badRequest, notFound } from '@tollgate/errors';
import type { RequestHandler, Response } from 'express';

function sendJson(res: Response, body: Buffer): void {
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', body.length);
  res.end(body);
}

const MODALITIES = ['text', 'embeddings'] as const;

/**
 * GET /models: the catalog in DESIGN.md's (and OpenRouter's) shape, serialised once at start per
 * `output_modalities` filter (`text`, `embeddings`, both, or `all`, the default).
 */
export function modelsHandler(catalog: Catalog): RequestHandler {
  const listOf = (models: readonly CatalogModel[]) => {
    const data = models.map(toModelsEntry);
    // OpenRouter's list envelope: the whole catalog is one page, so there is no next link.
    return Buffer.from(JSON.stringify({ data, links: { next: null }, total_count: data.length }));
  };
  const all = listOf(catalog.models());
  const only = new Map(
    MODALITIES.map((m) => [m, listOf(catalog.models().filter((x) => x.outputModalities.includes(m)))]),
  );
  return (req, res) => {
    const q = req.query.output_modalities;
    if (q === undefined || q === 'all') return sendJson(res, all);
    const wanted = typeof q === 'string' ? q.split(',').map((m) => m.trim()) : [];
    const unknown = wanted.filter((m) => !(MODALITIES as readonly string[]).includes(m));
    if (wanted.length === 0 || unknown.length > 0)
      throw badRequest(
        `output_modalities: expected 'all' or a comma-separated list of ${MODALITIES.join(', ')}`,
      );
    if (wanted.includes('text') && wanted.includes('embeddings')) return sendJson(res, all);
    sendJson(res, only.get(wanted[0] as (typeof MODALITIES)[number]) as Buffer);
  };
}

/** GET /models/{author}/{slug}/endpoints: the model's providers in OpenRouter's shape (404 if unknown). */
export function modelEndpointsHandler(catalog: Catalog): RequestHandler {
  const bodies = new Map(
    catalog.models().map((m) => [m.id, Buffer.from(JSON.stringify({ data: toModelEndpoints(m) }))]),
  );
  return (req, res) => {
    const id = `${req.params.author}/${req.params.slug}`;
    const body = bodies.get(id);
    if (!body) throw notFound(`No model ${id} in the catalog (GET /models lists them)`);
    sendJson(res, body);
  };
}
