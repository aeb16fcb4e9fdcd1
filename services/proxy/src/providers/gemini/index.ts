/**
 * Google's Gemini API in its own wire format (`format: gemini`): `POST <base>/models/<model>:generateContent`
 * and `:streamGenerateContent?alt=sse`, the key in `x-goog-api-key` (base_url
 * `https://generativelanguage.googleapis.com/v1beta`). The request is translated (request.ts), answers
 * and streams are read back into OpenAI shapes (response.ts, stream.ts), errors are classified with
 * the body (errors.ts).
 */
import type { WireFormat } from '../wire-format';
import { classifyGeminiError } from './errors';
import { buildGenerateContentRequest, geminiHeaders, generateContentPath } from './request';
import { readGenerateContent } from './response';
import { GeminiSseBridge } from './stream';

const basePath = (baseUrl: string): string => new URL(baseUrl).pathname.replace(/\/+$/, '');

export const gemini: WireFormat = {
  name: 'gemini',
  path: basePath,
  headers: geminiHeaders,
  prepare: buildGenerateContentRequest,
  requestBody(prepared, target, original) {
    const body: Record<string, unknown> = { ...prepared };
    // Without a caller's bound, the output stays within the model's cap (what admission assumed).
    const cap = target.model.maxOutputTokens;
    const g = (body.generationConfig ?? {}) as Record<string, unknown>;
    if (g.maxOutputTokens === undefined && cap !== undefined)
      body.generationConfig = { ...g, maxOutputTokens: cap };
    if (target.provider.simulator && original.sim !== undefined) body.sim = original.sim;
    return body;
  },
  attempt: ({ base, upstreamModel, stream }) => ({
    path: generateContentPath(base.path, upstreamModel, stream),
    headers: base.headers,
  }),
  readResponse: readGenerateContent,
  streamBridge: (ctx) => new GeminiSseBridge(ctx.model, ctx.created),
  classifyHttpError: classifyGeminiError,
};
