import { type Catalog, type CatalogModel, toModelEndpoints, toModelsEntry } from '@tollgate/catalog';
import { badRequest, notFound } from '@tollgate/errors';
import type { RequestHandler, Response } from 'express';

function sendJson(res: Response, body: Buffer): void {
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', body.length);
  res.end(body);
}

const MODALITIES = ['text', 'embeddings'] as const;
type Modality = (typeof MODALITIES)[number];

/** One list body, in OpenRouter's shape and (for Anthropic's SDKs) Anthropic's superset of it. */
function listBodies(models: readonly CatalogModel[]): { openrouter: Buffer; anthropic: Buffer } {
  const data = models.map(toModelsEntry);
  // OpenRouter's list envelope: the whole catalog is one page, so there is no next link.
  const openrouter = Buffer.from(JSON.stringify({ data, links: { next: null }, total_count: data.length }));
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
  return { openrouter, anthropic };
}

/** `output_modalities` → the modality to keep, or null for all (400 for anything else). */
function modalityOf(q: unknown): Modality | null {
  if (q === undefined || q === 'all') return null;
  const wanted = typeof q === 'string' ? q.split(',').map((m) => m.trim()) : [];
  if (wanted.length === 0 || wanted.some((m) => !(MODALITIES as readonly string[]).includes(m)))
    throw badRequest(
      `output_modalities: expected 'all' or a comma-separated list of ${MODALITIES.join(', ')}`,
    );
  return wanted.includes('text') && wanted.includes('embeddings') ? null : (wanted[0] as Modality);
}

/**
 * GET /models: the catalog in DESIGN.md's (and OpenRouter's) shape, serialised once at start per
 * `output_modalities` filter (`text`, `embeddings`, both, or `all`, the default). A request with
 * `anthropic-version` (Anthropic's SDKs, Claude Code) gets a superset in Anthropic's list shape too:
 * each entry also has `type: "model"`, `display_name` and `created_at` (RFC 3339), and the envelope
 * `has_more`, `first_id`, `last_id`.
 */
export function modelsHandler(catalog: Catalog): RequestHandler {
  const all = listBodies(catalog.models());
  const only = new Map(
    MODALITIES.map((m) => [m, listBodies(catalog.models().filter((x) => x.outputModalities.includes(m)))]),
  );
  return (req, res) => {
    const modality = modalityOf(req.query.output_modalities);
    const bodies = modality === null ? all : (only.get(modality) as typeof all);
    sendJson(res, req.headers['anthropic-version'] === undefined ? bodies.openrouter : bodies.anthropic);
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
