/**
 * AWS Bedrock's Converse API (`format: bedrock`): `POST <base>/model/<model id>/converse` and
 * `/converse-stream` (AWS event-stream framing), signed with SigV4 (signer.ts) for the provider's
 * `region` and service `bedrock`; base_url defaults to `https://bedrock-runtime.<region>.amazonaws.com`.
 * The request is translated (request.ts), answers and streams are read back into OpenAI shapes
 * (response.ts, stream.ts), errors are classified (errors.ts).
 */
import type { WireFormat } from '../wire-format';
import { classifyBedrockError } from './errors';
import { buildConverseRequest, conversePath } from './request';
import { readConverse } from './response';
import { signedHeaders } from './signer';
import { ConverseStreamBridge } from './stream';

const basePath = (baseUrl: string): string => new URL(baseUrl).pathname.replace(/\/+$/, '');

const HEADERS = Object.freeze({ 'content-type': 'application/json', accept: 'application/json' });

export const bedrock: WireFormat = {
  name: 'bedrock',
  path: basePath,
  headers: () => ({ ...HEADERS }),
  prepare: buildConverseRequest,
  requestBody(prepared, target, original) {
    const body: Record<string, unknown> = { ...prepared };
    const cap = target.model.maxOutputTokens;
    const inference = (body.inferenceConfig ?? {}) as Record<string, unknown>;
    if (inference.maxTokens === undefined && cap !== undefined)
      body.inferenceConfig = { ...inference, maxTokens: cap };
    if (target.provider.simulator && original.sim !== undefined) body.sim = original.sim;
    return body;
  },
  async attempt({ base, provider, upstreamModel, stream, body }) {
    const path = conversePath(base.path, upstreamModel, stream);
    return { path, headers: await signedHeaders(provider, path, body, base.headers) };
  },
  readResponse: readConverse,
  streamBridge: (ctx) => new ConverseStreamBridge(ctx.model, ctx.created),
  classifyHttpError: classifyBedrockError,
};
