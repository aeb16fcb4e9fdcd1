import type { Catalog, CatalogModel, CatalogProvider } from '@tollgate/catalog';
import { badRequest } from '@tollgate/errors';
import { toUnits } from '@tollgate/money';

/** One way to serve a request: a catalog model on one of its providers. */
export interface Candidate {
  model: CatalogModel;
  provider: CatalogProvider;
  upstreamModel: string;
}

export interface Route {
  /** In the order they are tried. */
  candidates: Candidate[];
  /** `provider.allow_fallbacks: false`: the first candidate's failure is the answer. */
  allowFallbacks: boolean;
}

const MAX_MODELS = 10;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function stringList(v: unknown, field: string): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string' || s.length === 0 || s.length > 200)) {
    throw badRequest(`${field}: expected an array of non-empty strings`);
  }
  if (v.length > 50) throw badRequest(`${field}: at most 50 entries`);
  return v as string[];
}

/** A USD-per-million-tokens price as money units per token × 1e6 (exact), or undefined. */
function maxPrice(v: unknown, field: string): bigint | undefined {
  if (v === undefined || v === null) return undefined;
  const text =
    typeof v === 'number' && Number.isFinite(v) && v >= 0 ? String(v) : typeof v === 'string' ? v : '';
  if (!/^\d+(\.\d+)?$/.test(text) && !/^\d+(\.\d+)?e-?\d+$/i.test(text)) {
    throw badRequest(`${field}: expected a non-negative number (USD per million tokens)`);
  }
  try {
    return toUnits(
      Number(text)
        .toFixed(10)
        .replace(/\.?0+$/, '') || '0',
    );
  } catch {
    throw badRequest(`${field}: expected a non-negative number (USD per million tokens)`);
  }
}

/**
 * The candidates of a chat completion request, in the order they are tried: `model`'s catalog
 * providers, then those of each model in OpenRouter's `models` fallback list, filtered and ordered by
 * OpenRouter's `provider` preferences (`order`, `only`, `ignore`, `sort: "price"`, `max_price`).
 * Invalid values are 400 naming the field; preferences that leave nothing are 400 naming why.
 */
export function routeOf(catalog: Catalog, primary: CatalogModel, body: Record<string, unknown>): Route {
  const ids = [primary.id];
  const fallbackModels = stringList(body.models, 'models');
  if (fallbackModels) {
    if (fallbackModels.length > MAX_MODELS) throw badRequest(`models: at most ${MAX_MODELS} models`);
    fallbackModels.forEach((id, i) => {
      if (!catalog.model(id))
        throw badRequest(`models[${i}]: '${id}' is not a model of this gateway (see GET /models)`);
      if (!ids.includes(id)) ids.push(id);
    });
  }
  const prefs = body.provider;
  if (prefs !== undefined && prefs !== null && !isObject(prefs))
    throw badRequest('provider: expected an object');
  const p = (prefs ?? {}) as Record<string, unknown>;
  const order = stringList(p.order, 'provider.order');
  const only = stringList(p.only, 'provider.only');
  const ignore = stringList(p.ignore, 'provider.ignore');
  if (p.allow_fallbacks !== undefined && p.allow_fallbacks !== null && typeof p.allow_fallbacks !== 'boolean')
    throw badRequest('provider.allow_fallbacks: expected a boolean');
  if (p.sort !== undefined && p.sort !== null && p.sort !== 'price')
    throw badRequest(`provider.sort: only "price" is supported (got ${JSON.stringify(p.sort).slice(0, 40)})`);
  let priceCap: { prompt?: bigint; completion?: bigint } = {};
  if (p.max_price !== undefined && p.max_price !== null) {
    if (!isObject(p.max_price))
      throw badRequest('provider.max_price: expected an object like {"prompt": 1, "completion": 2}');
    priceCap = {
      prompt: maxPrice(p.max_price.prompt, 'provider.max_price.prompt'),
      completion: maxPrice(p.max_price.completion, 'provider.max_price.completion'),
    };
  }

  let candidates: Candidate[] = ids.flatMap((id) => {
    const model = catalog.model(id) as CatalogModel;
    return model.providers.map((r) => ({ model, provider: r.provider, upstreamModel: r.upstreamModel }));
  });
  if (only) candidates = candidates.filter((c) => only.includes(c.provider.name));
  if (ignore) candidates = candidates.filter((c) => !ignore.includes(c.provider.name));
  if (candidates.length === 0)
    throw badRequest(
      `provider: no provider of ${ids.join(', ')} is left after provider.only / provider.ignore`,
    );
  // Per-token prices × 1e6 compared with USD-per-million caps: exact integer comparison.
  const within = (c: Candidate) =>
    (priceCap.prompt === undefined || c.model.priceUnits.prompt * 1_000_000n <= priceCap.prompt) &&
    (priceCap.completion === undefined || c.model.priceUnits.completion * 1_000_000n <= priceCap.completion);
  candidates = candidates.filter(within);
  if (candidates.length === 0)
    throw badRequest(`provider.max_price: every provider of ${ids.join(', ')} is priced above the maximum`);
  if (p.sort === 'price') {
    const price = (c: Candidate) => c.model.priceUnits.prompt + c.model.priceUnits.completion;
    candidates = candidates
      .map((c, i) => ({ c, i }))
      .sort((a, b) => (price(a.c) < price(b.c) ? -1 : price(a.c) > price(b.c) ? 1 : a.i - b.i))
      .map(({ c }) => c);
  }
  if (order) {
    const rank = (c: Candidate) => {
      const i = order.indexOf(c.provider.name);
      return i === -1 ? order.length : i;
    };
    candidates = candidates
      .map((c, i) => ({ c, i }))
      .sort((a, b) => rank(a.c) - rank(b.c) || a.i - b.i)
      .map(({ c }) => c);
  }
  return { candidates, allowFallbacks: p.allow_fallbacks !== false };
}
