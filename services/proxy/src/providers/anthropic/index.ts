/**
 * The Anthropic Messages wire format (`format: anthropic` catalog providers): pure translation
 * between the chat-completion API the proxy serves and Anthropic's `POST /v1/messages`.
 * request.ts builds the request and headers, response.ts reads a Message and its usage, stream.ts
 * reads stream events, errors.ts classifies provider errors for failover.
 */
export { classifyHttpError } from './errors';
export { buildMessagesRequest, messagesHeaders, messagesPath } from './request';
export { readMessage } from './response';
export { MessagesSseBridge } from './sse-bridge';
export { MessagesStreamReader, type StreamRead } from './stream';
