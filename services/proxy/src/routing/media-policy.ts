import { AppError, badRequest } from '@tollgate/errors';
import type { CanonicalRequest } from '../pipeline/request';
import type { ClassifiedHttpError } from '../providers/wire-format';
import type { Candidate } from './candidates';

/**
 * Media URLs and self-hosted providers (issue 23). A content part can name its media by URL
 * (`image_url.url`, and the `*_url` parts vLLM also reads: `video_url`, `audio_url`, …); a provider
 * fetches it itself, and a self-hosted one (vLLM) does so from inside the operator's network, where a
 * URL reaches internal hosts and the provider's error text ("cannot connect to 10.0.0.5:22") tells the
 * caller what it found. So:
 *
 * - a provider whose catalog entry says `remote_media: false` never gets a media URL: a request
 *   carrying one skips it, and is a 400 naming the field when no candidate is left (media as `data:`
 *   URIs pass);
 * - when a request carrying a media URL is refused by a provider with a 4xx, the provider's text is
 *   withheld from the caller (it may describe the fetch); it still goes to the logs and the record.
 *
 * Only requests whose candidates include a `remote_media: false` provider, or that a provider refused,
 * are scanned: nothing is added to the ordinary path.
 */
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const isUrlKey = (k: string) => k === 'url' || k.endsWith('_url');
const isRemote = (v: unknown) => typeof v === 'string' && !/^\s*data:/i.test(v);

/** The path of the first media URL of one content part, or null. */
function partUrl(part: unknown, at: string): string | null {
  if (!isObject(part)) return null;
  for (const [k, v] of Object.entries(part)) {
    if (k === 'type' || k === 'text') continue;
    if (isUrlKey(k) && isRemote(v)) return `${at}.${k}`;
    if (!isObject(v)) continue;
    for (const [k2, v2] of Object.entries(v)) {
      if (isUrlKey(k2) && isRemote(v2)) return `${at}.${k}.${k2}`;
    }
  }
  return null;
}

/** The first media URL (not a `data:` URI) among the content parts of `items`, as a field path. */
function firstUrl(items: unknown, field: string): string | null {
  if (!Array.isArray(items)) return null;
  for (let i = 0; i < items.length; i++) {
    const content = (items[i] as { content?: unknown } | null)?.content;
    if (!Array.isArray(content)) continue;
    for (let j = 0; j < content.length; j++) {
      const found = partUrl(content[j], `${field}.${i}.content.${j}`);
      if (found) return found;
    }
  }
  return null;
}

/** Where the request names media by URL (the field path), or null when it carries none. */
function remoteMediaAt(request: CanonicalRequest): string | null {
  return firstUrl(request.messages, 'messages') ?? firstUrl(request.native?.input, 'input');
}

/**
 * The candidates that may take `request` under their providers' media policy: all of them unless the
 * request names media by URL, then those whose provider accepts URLs. 400 when none is left.
 */
export function mediaCandidates(candidates: Candidate[], request: CanonicalRequest): Candidate[] {
  if (candidates.every((c) => c.provider.remoteMedia !== false)) return candidates;
  const at = remoteMediaAt(request);
  if (at === null) return candidates;
  const rest = candidates.filter((c) => c.provider.remoteMedia !== false);
  if (rest.length > 0) return rest;
  throw badRequest(
    `${at}: the providers of ${request.model} take media only inline, as base64 data: URIs; send the file's content instead of its URL`,
    { field: at },
  );
}

/** A provider's 4xx refusal of a request that names media by URL, with the provider's text withheld. */
export function withholdMediaErrorText(
  refused: ClassifiedHttpError,
  request: CanonicalRequest,
  status: number,
  providerName: string,
): ClassifiedHttpError {
  const s = refused.summary;
  // Only the answers whose summary carries the provider's text (providers/provider-error.ts).
  const relaysText = status >= 400 && status < 500 && ![401, 403, 404, 429].includes(status);
  if (!relaysText || s.status >= 500 || remoteMediaAt(request) === null) return refused;
  const summary = new AppError(
    s.type,
    `Provider ${providerName} rejected the request (HTTP ${status}); its message is withheld because the request names media by URL (check that each URL is public and reachable, or send the media as data: URIs)`,
    s.metadata,
    s.status,
  );
  return { ...refused, summary };
}
