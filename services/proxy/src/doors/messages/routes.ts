import type { Catalog } from '@tollgate/catalog';
import { errorHandler } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { authenticatedKey } from '../../auth/authenticate';
import type { Handler, ProxyRequest, ProxyResponse } from '../../http/types';
import type { TokenEstimator } from '../../pipeline/completion-init';
import { parse } from '../../pipeline/parse';
import type { FrontDoor } from '../door';
import { anthropicError, errorBody } from './errors';

/**
 * Anthropic's clients authenticate with `x-api-key` (the SDK's `apiKey`) or `Authorization: Bearer`
 * (its `authToken`, Claude Code's `ANTHROPIC_AUTH_TOKEN`): an `x-api-key` is read as the bearer key
 * when no Authorization header is sent.
 */
export const apiKeyHeader: RequestHandler = (req, _res, next) => {
  const key = req.headers['x-api-key'];
  if (req.headers.authorization === undefined && typeof key === 'string' && key.length > 0)
    req.headers.authorization = `Bearer ${key}`;
  next();
};

/**
 * Errors of the Messages routes in Anthropic's shape (the door's `errorBody`, with the request id),
 * never an internal text: the one express error handler (@tollgate/http) with Anthropic's rendering.
 */
export function messagesErrorHandler(logger: Logger): ErrorRequestHandler {
  return errorHandler(logger, (err, res) => {
    const e = anthropicError(err);
    const rid = res.getHeader('x-request-id');
    return { status: e.status, body: errorBody(e, typeof rid === 'string' ? rid : null) };
  });
}

/**
 * `POST /messages/count_tokens`: the gateway's own count of the prompt (system, messages, tools) —
 * the estimate its admission uses, never below what the tokenizer finds — for a model of the catalog
 * the key may use. No provider is called and nothing is billed.
 */
export function countTokensHandler(door: FrontDoor, catalog: Catalog, estimator: TokenEstimator): Handler {
  return (req: ProxyRequest, res: ProxyResponse) => {
    const body = req.body as Record<string, unknown> | null;
    // count_tokens takes no max_tokens; the parse needs one (it changes nothing counted).
    const withMax = typeof body === 'object' && body !== null ? { max_tokens: 1, ...body } : body;
    const { request } = parse(door, withMax, authenticatedKey(res), catalog, req.headers);
    const tokens = estimator.estimatePromptTokens(request.messages, request.toolsJson);
    const text = JSON.stringify({ input_tokens: tokens });
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('content-length', Buffer.byteLength(text));
    res.end(text);
  };
}
