/**
 * Bedrock embeddings through InvokeModel (`POST <base>/model/<id>/invoke`, SigV4 like Converse), in the
 * model family's own body: Amazon Titan (`amazon.titan-embed-*`: one `inputText` per request,
 * `dimensions`, answer `{embedding, inputTextTokenCount}`) or Cohere (`cohere.embed-*`: `texts` with
 * `input_type: search_document`, answer `{embeddings: [[…]]}`). Text only. Titan's token count is the
 * usage; Cohere reports none in the body, so the door bills its own exact count.
 */
import { AppError } from '@tollgate/errors';
import { dataOf, textInputs } from '../embedding-data';
import type { WireFormat } from '../wire-format';
import { bedrock } from './index';
import { signedHeaders } from './signer';

type Json = Record<string, unknown>;

const basePath = (baseUrl: string) => new URL(baseUrl).pathname.replace(/\/+$/, '');

function invokeBody(input: string[], model: string, dimensions: unknown): Json {
  if (model.includes('cohere.embed')) return { texts: input, input_type: 'search_document' };
  if (input.length !== 1)
    throw new AppError('bad_request', `input: ${model} embeds one input per request`, { param: 'input' });
  return { inputText: input[0], ...(dimensions !== undefined ? { dimensions } : {}) };
}

export const bedrockEmbeddings: WireFormat = {
  ...bedrock,
  prepare: (body) => ({ ...body, input: textInputs(body, 'Bedrock') }),
  requestBody(prepared, target) {
    const out = invokeBody(prepared.input as string[], target.upstreamModel, prepared.dimensions);
    if (target.provider.simulator && prepared.sim !== undefined) out.sim = prepared.sim;
    return out;
  },
  async attempt({ provider, upstreamModel, body, base }) {
    const path = `${basePath(provider.baseUrl)}/model/${encodeURIComponent(upstreamModel)}/invoke`;
    return { path, headers: await signedHeaders(provider, path, body, base.headers) };
  },
  readResponse(json) {
    if (Array.isArray(json.embedding)) {
      const data = dataOf([json.embedding]);
      const tokens = json.inputTextTokenCount;
      return data && { data, ...(typeof tokens === 'number' ? { usage: { prompt_tokens: tokens } } : {}) };
    }
    if (!Array.isArray(json.embeddings)) return null;
    const data = dataOf(json.embeddings);
    return data && { data };
  },
  streamBridge: () => null,
};
