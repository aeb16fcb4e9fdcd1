import type { CatalogModel } from '@tollgate/catalog';
import { AppError, badRequest } from '@tollgate/errors';
import { countTextTokens, newBudget } from '@tollgate/tokens';
import type { CanonicalRequest } from '../../pipeline/request';

/**
 * POST /embeddings in OpenAI's shape: `model`, `input` (a string, a list of strings, a token array or a
 * list of token arrays), `encoding_format` (`float`, default, or `base64`), `dimensions`, `user`; and,
 * as for chat, OpenRouter's `provider` preferences. Other fields are ignored (SDKs add their own). The
 * input's tokens are counted here, exactly (o200k; a token array counts its length), because every
 * token is billed input: admission reserves count × price and the limits are checked against it.
 */
type Json = Record<string, unknown>;

/** What the door keeps of a request besides the canonical body (per-input token counts, the encoding). */
export interface EmbeddingsMeta {
  encoding: 'float' | 'base64';
  /** Token count of each input, in order. */
  tokens: number[];
  /** The inputs were token arrays. */
  tokenArrays: boolean;
}

const meta = new WeakMap<CanonicalRequest, EmbeddingsMeta>();
export const metaOf = (r: CanonicalRequest): EmbeddingsMeta => meta.get(r) as EmbeddingsMeta;

/** Up to 4 M characters counted exactly (an embeddings request is at most a few hundred thousand tokens). */
const COUNT_CHARS = 4_000_000;
const COUNT_MS = 200;
const USER_MAX = 256;

const isTokenArray = (v: unknown): v is number[] =>
  Array.isArray(v) && v.length > 0 && v.every((t) => Number.isInteger(t) && (t as number) >= 0);

function inputsOf(input: unknown): { inputs: string[] | number[][]; tokenArrays: boolean } {
  if (typeof input === 'string') return { inputs: [input], tokenArrays: false };
  if (isTokenArray(input)) return { inputs: [input], tokenArrays: true };
  if (Array.isArray(input) && input.length > 0) {
    if (input.every((i) => typeof i === 'string')) return { inputs: input as string[], tokenArrays: false };
    if (input.every(isTokenArray)) return { inputs: input as number[][], tokenArrays: true };
  }
  throw badRequest(
    'input: expected a non-empty string, a list of strings, a token array or a list of token arrays',
  );
}

export function parseEmbeddingsRequest(raw: unknown): CanonicalRequest {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw badRequest('body: expected a JSON object');
  const body = raw as Json;
  if (typeof body.model !== 'string' || body.model.length === 0)
    throw badRequest('model: expected a model id');
  const { inputs, tokenArrays } = inputsOf(body.input);
  inputs.forEach((i, n) => {
    if (typeof i === 'string' && i.length === 0) throw badRequest(`input[${n}]: an input may not be empty`);
  });
  const encoding = body.encoding_format ?? 'float';
  if (encoding !== 'float' && encoding !== 'base64')
    throw badRequest("encoding_format: expected 'float' or 'base64'");
  const dims = body.dimensions;
  if (dims !== undefined && dims !== null && !(Number.isInteger(dims) && (dims as number) > 0))
    throw badRequest('dimensions: expected a positive integer');
  if (body.user !== undefined && (typeof body.user !== 'string' || body.user.length > USER_MAX))
    throw badRequest(`user: expected a string of at most ${USER_MAX} characters`);
  const budget = newBudget(COUNT_CHARS, COUNT_MS);
  const tokens = tokenArrays
    ? (inputs as number[][]).map((t) => t.length)
    : (inputs as string[]).map((t) => countTextTokens(t, budget));
  // The canonical body: what the embedding wire formats read (providers/embeddings.ts).
  const canonical: Json = { model: body.model, input: inputs };
  if (dims !== undefined && dims !== null) canonical.dimensions = dims;
  if (body.user !== undefined) canonical.user = body.user;
  if (body.provider !== undefined) canonical.provider = body.provider;
  if (body.sim !== undefined) canonical.sim = body.sim;
  const request: CanonicalRequest = {
    body: canonical,
    model: body.model,
    messages: [],
    stream: false,
    maxTokens: 0,
    n: 1,
    toolsJson: null,
    promptTokens: tokens.reduce((a, b) => a + b, 0),
  };
  meta.set(request, { encoding, tokens, tokenArrays });
  return request;
}

/** The request against its model: an embeddings model, and within its limits (400/413 naming the limit). */
export function checkEmbeddingsRequest(request: CanonicalRequest, model: CatalogModel): void {
  const limits = model.embeddings;
  if (!limits)
    throw badRequest(
      `model: '${model.id}' is not an embeddings model (see GET /models?output_modalities=embeddings)`,
    );
  const { tokens } = metaOf(request);
  if (tokens.length > limits.maxInputs)
    throw badRequest(
      `input: ${tokens.length} inputs; ${model.id} takes at most ${limits.maxInputs} per request (max_inputs)`,
    );
  tokens.forEach((t, i) => {
    if (t > model.contextLength)
      throw badRequest(
        `input[${i}]: ${t} tokens; ${model.id} embeds at most ${model.contextLength} tokens per input (context_length)`,
      );
  });
  const total = request.promptTokens ?? 0;
  if (total > limits.maxTokensPerRequest)
    throw new AppError(
      'payload_too_large',
      `input: ${total} tokens in all; ${model.id} takes at most ${limits.maxTokensPerRequest} tokens per request (max_tokens_per_request)`,
      { limit: limits.maxTokensPerRequest, tokens: total },
    );
  const dims = request.body.dimensions as number | undefined;
  if (dims !== undefined && (!limits.customDimensions || dims > limits.dimensions))
    throw badRequest(
      limits.customDimensions
        ? `dimensions: ${model.id} returns at most ${limits.dimensions} dimensions`
        : `dimensions: ${model.id} returns ${limits.dimensions} dimensions and cannot shorten them`,
    );
}
