import { type Catalog, worstCaseCost, worstCaseTokens } from '@tollgate/catalog';
import { AppError } from '@tollgate/errors';
import { allowsModel, type CachedKey } from '@tollgate/key-cache';
import { type FrontDoor, isNativeFor } from '../doors/door';
import { formatFor } from '../providers';
import type { WireFormatName } from '../providers/wire-format';
import { type Candidate, routeOf } from '../routing/candidates';
import { mediaCandidates } from '../routing/media-policy';
import { promptBound } from './bound';
import type { RequestMedia } from './media';
import type { Parsed } from './parse';
import type { CanonicalRequest } from './request';

type Json = Record<string, unknown>;

/** What a request may be dispatched to, in order, and its body in each wire format of the plan. */
export interface Plan {
  door: FrontDoor;
  request: CanonicalRequest;
  candidates: Candidate[];
  /** The request in each wire format of the plan (`WireFormat.prepare`, or the door's native body). */
  prepared: Partial<Record<WireFormatName, Json>>;
}

/**
 * Stage 2, plan: the candidates (the model's providers, then OpenRouter `models` fallbacks; those
 * outside the key's allow-list are never tried, nor those whose media policy refuses the request's
 * media URLs; circuit-open providers are skipped while another is left), and the request in each of
 * their wire formats.
 */
export function plan(
  door: FrontDoor,
  { request, model }: Parsed,
  key: CachedKey,
  deps: { catalog: Catalog; available(providerName: string): boolean },
): Plan {
  const route = routeOf(deps.catalog, model, request.body);
  const allowed = route.candidates.filter((c) => allowsModel(key, c.model.id));
  // Media URLs never reach a provider whose catalog entry says `remote_media: false`.
  const all = mediaCandidates(route.allowFallbacks ? allowed : allowed.slice(0, 1), request);
  const usable = all.filter((c) => deps.available(c.provider.name));
  return prepare(door, request, usable.length > 0 ? usable : all);
}

/**
 * Each wire format of the plan translates the request once, before admission: a request one cannot
 * express (Anthropic: n > 1, audio parts, …) skips that format's candidates, and is its 400 when
 * nothing else is left. A candidate of the door's native format gets the caller's body instead.
 */
function prepare(door: FrontDoor, request: CanonicalRequest, candidates: Candidate[]): Plan {
  const prepared: Plan['prepared'] = {};
  // Allocated only when a format cannot express the request (rare).
  let failed: WireFormatName[] | null = null;
  let error: unknown = null;
  // A native candidate is sent the caller's body as it came (upstreamBody): nothing to prepare.
  const native = (cand: Candidate) =>
    door.nativeBody !== undefined && !!request.native && isNativeFor(door, cand.provider);
  for (const cand of candidates) {
    const name = cand.provider.format;
    if (native(cand) || prepared[name] !== undefined || failed?.includes(name)) continue;
    if (request.untranslatable) {
      if (failed === null) failed = [];
      failed.push(name);
      error ??= request.untranslatable;
      continue;
    }
    try {
      prepared[name] = formatFor(door, name).prepare(request.body);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      if (failed === null) failed = [];
      failed.push(name);
      error ??= err;
    }
  }
  if (failed === null) return { door, request, candidates, prepared };
  const skip = failed;
  const rest = candidates.filter((cand) => native(cand) || !skip.includes(cand.provider.format));
  if (rest.length === 0) throw error;
  return { door, request, candidates: rest, prepared };
}

/**
 * The dearest candidate that may serve bounds what the request can cost (admission reserves it): its
 * prompt is the text estimate plus the media at that model's bounds (bound.ts `promptBound`), priced
 * at the dearest input price — the 1-hour cache-write price when the request asks for it.
 */
export function worstCase(p: Plan, textTokens: number, media: RequestMedia): bigint {
  let worst = 0n;
  for (const cand of p.candidates) {
    const w = worstCaseCost(cand.model, promptBound(cand.model, textTokens, media), {
      maxTokens: p.request.maxTokens ?? undefined,
      n: p.request.n,
      cacheWrite1h: media.cacheWrite1h,
    });
    if (w > worst) worst = w;
  }
  return worst;
}

/** The request's worst-case tokens over its candidates (the key's tokens-per-minute charge). */
export function worstTokens(p: Plan, textTokens: number, media: RequestMedia): number {
  let worst = 0;
  for (const cand of p.candidates) {
    const w = worstCaseTokens(cand.model, promptBound(cand.model, textTokens, media), {
      maxTokens: p.request.maxTokens ?? undefined,
      n: p.request.n,
    });
    if (w > worst) worst = w;
  }
  return worst;
}

/** The upstream body for `cand` (its wire format's, documented fields only; or the door's native body). */
export function upstreamBody(p: Plan, cand: Candidate): Json {
  const { door, request } = p;
  const name = cand.provider.format;
  if (door.nativeBody && request.native && isNativeFor(door, cand.provider)) {
    return door.nativeBody(request, {
      upstreamModel: cand.upstreamModel,
      simulator: cand.provider.simulator === true,
    });
  }
  const format = formatFor(door, name);
  return format.requestBody(p.prepared[format.name] as Json, cand, request.body, request.stream);
}
