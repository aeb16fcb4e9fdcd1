/**
 * OpenAI's embeddings API (`POST <base_url>/embeddings`, Bearer key) for OpenAI, vLLM, Ollama, TEI and
 * other compatible servers. Vectors are always asked for as floats (the door encodes base64 itself, the
 * same for every provider); `dimensions` and `user` pass on.
 */
import type { WireFormat } from '../wire-format';
import { classifyHttpError } from './errors';
import { chatCompletionsHeaders } from './request';

type Json = Record<string, unknown>;

/** The OpenAI embeddings body for one candidate. */
export function embeddingsBody(body: Json, upstreamModel: string, simulator: boolean): Json {
  const out: Json = { model: upstreamModel, input: body.input, encoding_format: 'float' };
  if (body.dimensions !== undefined) out.dimensions = body.dimensions;
  if (body.user !== undefined) out.user = body.user;
  if (simulator && body.sim !== undefined) out.sim = body.sim;
  return out;
}

/** An OpenAI embeddings answer, or null when it is not one. */
export function readEmbeddings(json: Json): Json | null {
  if (!Array.isArray(json.data)) return null;
  return json;
}

const basePath = (baseUrl: string) => new URL(baseUrl).pathname.replace(/\/+$/, '');

export const openaiEmbeddings: WireFormat = {
  name: 'openai',
  path: (baseUrl) => `${basePath(baseUrl)}/embeddings`,
  headers: chatCompletionsHeaders,
  prepare: (body) => body,
  requestBody: (prepared, target) =>
    embeddingsBody(prepared, target.upstreamModel, target.provider.simulator),
  attempt: ({ provider, base }) => ({
    path: `${basePath(provider.baseUrl)}/embeddings`,
    headers: base.headers,
  }),
  readResponse: readEmbeddings,
  streamBridge: () => null,
  classifyHttpError,
};
