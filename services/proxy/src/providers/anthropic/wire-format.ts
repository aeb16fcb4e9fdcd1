import { providerRefusal } from '../provider-error';
import type { WireFormat } from '../wire-format';
import { classifyHttpError as classifyAnthropicError, failureOfClass } from './errors';
import { buildMessagesRequest, messagesHeaders, messagesPath } from './request';
import { readMessage } from './response';
import { MessagesSseBridge } from './sse-bridge';

/** The Anthropic Messages adapter (catalog `format: anthropic`). */
export const anthropic: WireFormat = {
  name: 'anthropic',
  path: messagesPath,
  headers: messagesHeaders,
  // Translated once per request (a request it cannot express, n > 1, audio parts, …, is a 400).
  prepare: (body) => buildMessagesRequest(body, { model: '' }),
  requestBody(messages, target, original) {
    // No OpenAI-only fields such as stream_options.
    const body: Record<string, unknown> = { ...messages, model: target.upstreamModel };
    // Without a caller's max_tokens, the default stays within the model's output cap (what the
    // admission worst case assumed).
    const cap = target.model.maxOutputTokens;
    const unbounded = original.max_tokens == null && original.max_completion_tokens == null;
    if (unbounded && cap !== undefined && (body.max_tokens as number) > cap) body.max_tokens = cap;
    if (target.provider.simulator && original.sim !== undefined) body.sim = original.sim;
    return body;
  },
  // An Anthropic Message → the chat.completion (OpenAI-shaped usage).
  readResponse: (json, ctx) => readMessage(json, ctx),
  // Anthropic events → the OpenAI chunks the relay reads.
  streamBridge: (ctx) => new MessagesSseBridge(ctx.model, ctx.created),
  classifyHttpError(status, bodyText, providerName) {
    const { error, detail } = providerRefusal(status, bodyText, providerName);
    // The body refines the status: a 400 `billing_error` is our account's problem (credentials), not
    // the caller's.
    const { errorClass } = classifyAnthropicError(status, bodyText);
    return { failure: failureOfClass(errorClass), summary: error, detail };
  },
};
