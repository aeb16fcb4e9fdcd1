/**
 * The Anthropic Messages wire format (`format: anthropic` catalog providers): pure translation
 * between the chat-completion API the proxy serves and Anthropic's `POST /v1/messages`.
 * request.ts builds the request and headers, response.ts reads a Message and its usage, stream.ts
 * reads stream events (sse-bridge.ts feeds them to the relay), errors.ts classifies provider errors
 * (what happened; dispatch decides the failover); wire-format.ts is the adapter the pipeline uses (providers/wire-format.ts).
 */
export { classifyHttpError } from './errors';
export { buildMessagesRequest, messagesHeaders, messagesPath } from './request';
export { readMessage } from './response';
export { MessagesStreamReader, type StreamRead } from './stream';
export { anthropic } from './wire-format';
