import type { IncomingHttpHeaders } from 'node:http';
import type { Catalog, CatalogModel } from '@tollgate/catalog';
import { AppError, badRequest } from '@tollgate/errors';
import { allowsModel, type CachedKey } from '@tollgate/key-cache';
import type { FrontDoor } from '../doors/door';
import type { CanonicalRequest } from './request';

/** What `parse` hands on: the canonical request and the catalog model it asks for. */
export interface Parsed {
  request: CanonicalRequest;
  model: CatalogModel;
}

/**
 * Stage 1, parse: the door reads its API's body into the canonical request (its 400 names the
 * field), then the model must be the catalog's and allowed for the key (403 naming its allow-list).
 */
export function parse(
  door: FrontDoor,
  body: unknown,
  key: CachedKey,
  catalog: Catalog,
  headers?: IncomingHttpHeaders,
): Parsed {
  const request = door.parse(body, headers);
  const model = catalog.model(request.model);
  if (!model) throw badRequest(`model: '${request.model}' is not a model of this gateway (see GET /models)`);
  if (!allowsModel(key, model.id)) {
    throw new AppError(
      'forbidden',
      `model: this key may not use '${model.id}' (its allowed_models: ${(key.allowedModels ?? []).join(', ')})`,
      { model: model.id },
    );
  }
  if (door.check) door.check(request, model);
  else if (!model.outputModalities.includes('text'))
    throw badRequest(`model: '${model.id}' is an embeddings model; it answers POST /embeddings`);
  return { request, model };
}
