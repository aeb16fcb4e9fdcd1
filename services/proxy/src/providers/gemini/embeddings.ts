/**
 * Gemini embeddings: `POST <base>/models/<model>:batchEmbedContents` with one request per input
 * (`{model: "models/<m>", content: {parts: [{text}]}, outputDimensionality?}`) → `{embeddings:
 * [{values}]}`, in input order. Text only (token arrays are a 400 that skips Gemini candidates). Gemini
 * reports no token counts for embeddings: the door bills its own exact count.
 */
import { dataOf, textInputs } from '../embedding-data';
import type { WireFormat } from '../wire-format';
import { gemini } from './index';

type Json = Record<string, unknown>;

export const geminiEmbeddings: WireFormat = {
  ...gemini,
  prepare: (body) => ({ ...body, input: textInputs(body, 'Gemini') }),
  requestBody(prepared, target) {
    const model = `models/${target.upstreamModel}`;
    const requests = (prepared.input as string[]).map((text) => ({
      model,
      content: { parts: [{ text }] },
      ...(prepared.dimensions !== undefined ? { outputDimensionality: prepared.dimensions } : {}),
    }));
    const out: Json = { requests };
    if (target.provider.simulator && prepared.sim !== undefined) out.sim = prepared.sim;
    return out;
  },
  attempt: ({ base, upstreamModel }) => ({
    path: `${base.path}/models/${encodeURIComponent(upstreamModel)}:batchEmbedContents`,
    headers: base.headers,
  }),
  readResponse(json) {
    if (!Array.isArray(json.embeddings)) return null;
    const data = dataOf(json.embeddings.map((e: Json) => e?.values));
    return data && { data };
  },
  streamBridge: () => null,
};
