/**
 * The Anthropic Messages wire format (`format: anthropic` catalog providers): pure translation
 * between the chat-completion API the proxy serves and Anthropic's `POST /v1/messages`.
 * request.ts builds the request and headers, response.ts reads a Message and its usage, stream.ts
 * reads stream events, errors.ts classifies provider errors for failover.
 */
export { type ClassifiedError, classCode, classifyHttpError, classifyStreamError } from './errors';
export {
  ANTHROPIC_VERSION,
  type BuildOptions,
  buildMessagesRequest,
  DEFAULT_MAX_TOKENS,
  messagesHeaders,
  messagesPath,
} from './request';
export { finishReason, openAiUsage, type ReadContext, readMessage } from './response';
export { MessagesSseBridge } from './sse-bridge';
export { MessagesStreamReader, type StreamRead } from './stream';
