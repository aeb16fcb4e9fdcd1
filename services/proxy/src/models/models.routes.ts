import { type Catalog, toModelEndpoints, toModelsEntry } from '@tollgate/catalog';
import { notFound } from '@tollgate/errors';
import type { RequestHandler, Response } from 'express';

function sendJson(res: Response, body: Buffer): void {
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', body.length);
  res.end(body);
}

/**
 * GET /models: the catalog in DESIGN.md's (and OpenRouter's) shape, serialised once at start. A
 * request with `anthropic-version` (Anthropic's SDKs, Claude Code) gets a superset in Anthropic's list
 * shape too: each entry also has `type: "model"`, `display_name` and `created_at` (RFC 3339), and the
 * envelope `has_more`, `first_id`, `last_id`.
 */
export function modelsHandler(catalog: Catalog): RequestHandler {
  const data = catalog.models().map(toModelsEntry);
  // OpenRouter's list envelope: the whole catalog is one page, so there is no next link.
  const body = Buffer.from(JSON.stringify({ data, links: { next: null }, total_count: data.length }));
  const anthropicData = data.map((m) => ({
    ...m,
    type: 'model',
    display_name: m.name,
    created_at: new Date(m.created * 1000).toISOString(),
  }));
  const anthropic = Buffer.from(
    JSON.stringify({
      data: anthropicData,
      links: { next: null },
      total_count: data.length,
      has_more: false,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
    }),
  );
  return (req, res) => sendJson(res, req.headers['anthropic-version'] === undefined ? body : anthropic);
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
