import type { IncomingHttpHeaders } from 'node:http';
import { safeText } from '@tollgate/errors';
import type { Completion } from '../../pipeline/completion';
import type { CanonicalRequest } from '../../pipeline/request';
import { parseChatRequest } from '../chat/validation';
import { parseResponsesRequest, type ResponsesRequest } from './request';
import type { ResponseContext } from './response';

/** The canonical request of a Responses request, with what its answer needs (echo, tool names). */
export interface ResponsesCanonical extends CanonicalRequest {
  responses: ResponsesRequest;
}

/**
 * The door's parse: the Responses body → the canonical chat request (request.ts), checked like a chat
 * request (the chat door's validation: token figures for admission, the tools' JSON, what the catalog
 * does not price) so every later stage reads it as any other.
 */
export function parseResponses(body: unknown, headers?: IncomingHttpHeaders): ResponsesCanonical {
  const responses = parseResponsesRequest(body);
  const request: ResponsesCanonical = Object.assign(parseChatRequest(responses.chat), { responses });
  request.sessionId = sessionOf(headers, body as Record<string, unknown>);
  // A provider serving the Responses API itself gets the caller's body (native.ts).
  request.native = body as Record<string, unknown>;
  if (responses.withheld.length > 0) {
    // Hosted tools are never given to a provider (no format here runs them, and the catalog does
    // not price their calls): the answer says which were left out.
    request.answerHeaders = [[WITHHELD_TOOLS_HEADER, responses.withheld.join(',')]];
    request.withheldTools = responses.withheld;
  }
  return request;
}

const SESSION_MAX = 200;

/**
 * The agent session of the request (the usage event's `session_id`, shared with the Messages door's
 * Claude Code session): Codex sends `session-id` (and `thread-id`) headers and repeats the session in
 * `client_metadata.session_id`.
 */
function sessionOf(headers: IncomingHttpHeaders | undefined, body: Record<string, unknown>): string | null {
  const fromHeader = headers?.['session-id'] ?? headers?.['thread-id'];
  const meta = body.client_metadata as Record<string, unknown> | null | undefined;
  const raw =
    typeof fromHeader === 'string'
      ? fromHeader
      : typeof meta?.session_id === 'string'
        ? meta.session_id
        : null;
  return raw === null || raw.length === 0 ? null : safeText(raw, SESSION_MAX);
}

/** The answer header naming the hosted tools withheld from the provider. */
const WITHHELD_TOOLS_HEADER = 'X-Tollgate-Withheld-Tools';

/** What every Response of a completion shares. */
export function contextOf(c: Completion): ResponseContext {
  const { echo, names } = (c.request as ResponsesCanonical).responses;
  return { id: c.requestId, model: c.model.id, createdAt: Math.floor(c.startedAt / 1000), echo, names };
}
