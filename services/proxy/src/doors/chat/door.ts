import { finishReasonOf } from '../../pipeline/errors';
import { isProviderUsage, tokensFromUsage } from '../../providers/openai/usage';
import type { FrontDoor } from '../door';
import { DONE_EVENT, errorEvent } from './events';
import { StreamRelay } from './stream-relay';
import { completeUsage, messageText } from './usage';
import { parseChatRequest } from './validation';

/**
 * The chat-completions door (`POST /chat/completions`, OpenAI's API and the proxy's first). Its
 * canonical request is the body itself and its native format is OpenAI's, so nothing is translated
 * for an OpenAI provider: the request goes out as the allowed fields of the body
 * (providers/openai/request.ts), the answer comes back with its id, model and usage rewritten, and the
 * stream passes through the byte relay (stream-relay.ts with the SSE reader providers/sse.ts, chunk.ts, byte-out.ts).
 * Another format (Anthropic) is translated by its wire format both ways, into the same relay.
 */
export const chatDoor: FrontDoor = {
  api: 'chat',
  path: '/chat/completions',
  native: 'openai',
  parse: parseChatRequest,

  /** A chat.completion: priced from the provider's usage (else the estimate of its text), ids rewritten. */
  readJson(c, json) {
    const providerUsage = json.usage;
    const fromProvider = isProviderUsage(providerUsage);
    const tokens = fromProvider ? tokensFromUsage(providerUsage) : c.estimate(messageText(json));
    const cost = c.cost(tokens);
    const upstreamId = typeof json.id === 'string' ? json.id : null;
    json.id = c.requestId;
    json.model = c.model.id;
    json.provider = c.provider.name;
    json.usage = completeUsage(providerUsage, tokens, cost);
    return {
      kind: 'served',
      tokens,
      source: fromProvider ? 'provider' : 'estimated',
      costUnits: cost,
      finishReason: finishReasonOf(json.choices),
      upstreamId,
      lastBytes: c.cancelled ? null : JSON.stringify(json),
    };
  },

  stream: (c, res, writeTimeoutMs) => new StreamRelay(c, res, writeTimeoutMs),

  // The standard envelope (@tollgate/errors), as the express error handler writes it.
  errorBody: (err) => ({ status: err.status, body: err.toEnvelope() }),

  // After the 200: the §6 error chunk, then [DONE].
  streamError: (err, providerName) => errorEvent(err, providerName) + DONE_EVENT,
};
