import { AppError } from '@tollgate/errors';
import { toNumber } from '@tollgate/money';
import type { Completion } from '../../pipeline/completion';
import type { Outcome } from '../../pipeline/outcome';
import { embeddingFormatOf } from '../../providers/embeddings';
import type { TokenCounts } from '../../providers/wire-format';
import { DONE_EVENT, errorEvent } from '../chat/events';
import type { FrontDoor } from '../door';
import { checkEmbeddingsRequest, metaOf, parseEmbeddingsRequest } from './validation';

/**
 * The embeddings door (`POST /embeddings`, OpenAI's API). Every provider is reached through its
 * embedding wire format (providers/embeddings.ts), which hands back `{data: [{index, embedding}],
 * usage?}`; the door checks one vector per input came back, puts them in input order, encodes them
 * (`float`, or `base64`: little-endian float32, as OpenAI does), and prices the input tokens: the
 * provider's count when it reports one, else the door's exact count (Gemini, Cohere report none).
 * No vector is stored anywhere; the usage event and the generation record carry tokens and cost only.
 */
type Json = Record<string, unknown>;

function encode(vector: number[], encoding: 'float' | 'base64'): number[] | string {
  if (encoding === 'float') return vector;
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i] as number, i * 4);
  return bytes.toString('base64');
}

/** The vectors in input order, or null when the provider did not return exactly one per input. */
function vectorsOf(json: Json, inputs: number): number[][] | null {
  const data = json.data;
  if (!Array.isArray(data) || data.length !== inputs) return null;
  const out: number[][] = new Array(inputs);
  for (let i = 0; i < data.length; i++) {
    const d = data[i] as Json;
    const index = typeof d.index === 'number' ? d.index : i;
    if (!Number.isInteger(index) || index < 0 || index >= inputs || out[index] !== undefined) return null;
    if (!Array.isArray(d.embedding)) return null;
    out[index] = d.embedding as number[];
  }
  return out;
}

function readEmbeddings(c: Completion, json: Json): Outcome | null {
  const meta = metaOf(c.request);
  const vectors = vectorsOf(json, meta.tokens.length);
  if (!vectors) return null;
  const usage = json.usage as Json | undefined;
  // The provider's count is its invoice, but a figure of 0 for inputs the door counted (every input
  // is non-empty) is no count at all: such an answer is billed the door's exact count, as estimated.
  const reported = typeof usage?.prompt_tokens === 'number' && usage.prompt_tokens > 0;
  const prompt = reported ? Math.floor(usage.prompt_tokens as number) : (c.request.promptTokens ?? 0);
  const tokens: TokenCounts = { prompt, completion: 0, cached: 0, cacheWrite: 0, reasoning: 0 };
  const cost = c.cost(tokens);
  const answer = {
    object: 'list',
    data: vectors.map((v, index) => ({ object: 'embedding', index, embedding: encode(v, meta.encoding) })),
    model: c.model.id,
    id: c.requestId,
    provider: c.provider.name,
    usage: { prompt_tokens: prompt, total_tokens: prompt, cost: toNumber(cost) },
  };
  return {
    kind: 'served',
    tokens,
    source: reported ? 'provider' : 'estimated',
    costUnits: cost,
    finishReason: null,
    upstreamId: typeof json.id === 'string' ? json.id : null,
    lastBytes: c.cancelled ? null : JSON.stringify(answer),
  };
}

export const embeddingsDoor: FrontDoor = {
  api: 'embeddings',
  path: '/embeddings',
  native: null,
  parse: parseEmbeddingsRequest,
  check: checkEmbeddingsRequest,
  wireFormat: embeddingFormatOf,
  readJson: (c, json) => readEmbeddings(c, json),
  stream() {
    // parse sets stream: false; the pipeline never asks.
    throw new AppError('internal', 'Embeddings are not streamed');
  },
  errorBody: (err) => ({ status: err.status, body: err.toEnvelope() }),
  streamError: (err, providerName) => errorEvent(err, providerName) + DONE_EVENT,
};
