/**
 * The OpenAI chat-completions wire format (`format: openai`, the default): the proxy's own API, so
 * requests go out as the allowed fields of the caller's body (request.ts), answers and chunks come
 * back as they are (the relay rewrites ids), usage is read by usage.ts, errors are classified by
 * status (errors.ts).
 */
import type { WireFormat } from '../wire-format';
import { classifyHttpError } from './errors';
import { chatCompletionsBody, chatCompletionsHeaders, chatCompletionsPath } from './request';

export const openai: WireFormat = {
  name: 'openai',
  path: chatCompletionsPath,
  headers: chatCompletionsHeaders,
  // The caller's body is already in this format: the fields are picked per candidate.
  prepare: (body) => body,
  requestBody: (original, target, _original, stream) =>
    chatCompletionsBody(original, target.provider, target.upstreamModel, stream),
  // A chat.completion already: relayed with its id, model and usage rewritten.
  readResponse: (json) => json,
  streamBridge: () => null,
  classifyHttpError,
};
