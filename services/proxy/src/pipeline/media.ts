import { emptyCensus, type ImageDetail, type MediaCensus } from '@tollgate/catalog';
import { badRequest } from '@tollgate/errors';
import type { CanonicalMessage } from './request';

/**
 * The media of a request and what it asks of prompt caching (issue 22), read once from the canonical
 * request (every front door's image and document parts end up there): the images by `detail` and the
 * documents, priced per candidate model by its catalog bounds (@tollgate/catalog `mediaPromptTokens`)
 * in the admission's worst case and in the upper-bound estimate alike.
 */
export interface RequestMedia {
  census: MediaCensus;
  /** A part asks for prompt caching (`cache_control`): the whole prompt may be written to cache. */
  cacheWrite: boolean;
  /** …for one hour (`cache_control.ttl: "1h"`, Anthropic's dearer cache write). */
  cacheWrite1h: boolean;
}

/** The default of MAX_IMAGES_PER_REQUEST. */
export const DEFAULT_MAX_IMAGES = 100;

const IMAGE_PARTS = new Set(['image_url', 'input_image', 'image']);
const DOCUMENT_PARTS = new Set(['file', 'input_file', 'document']);

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** OpenAI's `detail` of an image part (`image_url.detail`, or the Responses API's `detail`); else auto. */
function detailOf(part: Json): ImageDetail {
  const d = isObj(part.image_url) ? part.image_url.detail : part.detail;
  return d === 'low' || d === 'high' ? d : 'auto';
}

function cacheAsk(v: unknown, media: RequestMedia): void {
  if (!isObj(v)) return;
  media.cacheWrite = true;
  if (v.ttl === '1h') media.cacheWrite1h = true;
}

/**
 * Reads the media parts and cache requests of `messages`; more images than `maxImages`
 * (MAX_IMAGES_PER_REQUEST) is a 400 naming the setting.
 */
export function requestMedia(
  messages: readonly CanonicalMessage[],
  maxImages: number,
  /** The cache writes a door's native body asks for beyond the canonical messages (`CanonicalRequest.cacheWrite`). */
  asked?: '5m' | '1h',
  /** Media of a door's native body the canonical messages do not carry (`CanonicalRequest.nativeMedia`). */
  native?: { images: number; documents: number },
): RequestMedia {
  const media: RequestMedia = {
    census: emptyCensus(),
    cacheWrite: asked !== undefined,
    cacheWrite1h: asked === '1h',
  };
  let images = native?.images ?? 0;
  media.census.images.auto += images;
  media.census.documents += native?.documents ?? 0;
  for (const m of messages) {
    cacheAsk(m.cache_control, media);
    const content = m.content;
    if (!Array.isArray(content)) continue;
    for (const part of content) {
      if (!isObj(part)) continue;
      cacheAsk(part.cache_control, media);
      const type = part.type;
      if (typeof type !== 'string') continue;
      if (IMAGE_PARTS.has(type)) {
        media.census.images[detailOf(part)]++;
        images++;
      } else if (DOCUMENT_PARTS.has(type)) media.census.documents++;
    }
  }
  if (images > maxImages) {
    throw badRequest(
      `messages: ${images} images in one request; at most ${maxImages} are accepted (MAX_IMAGES_PER_REQUEST)`,
      { field: 'messages', limit: maxImages, setting: 'MAX_IMAGES_PER_REQUEST' },
    );
  }
  return media;
}

/** A request without media or cache requests (a completion made without a census). */
export const NO_MEDIA: RequestMedia = Object.freeze({
  census: Object.freeze(emptyCensus()),
  cacheWrite: false,
  cacheWrite1h: false,
});
