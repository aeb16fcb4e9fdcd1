import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The request and response the chat route works with: Node's own, plus the two fields it shares
 * between its steps (the parsed body, and `locals`). An express Request/Response is one of these, so
 * the same handlers serve the chat route from the request listener (http/chat-dispatch.ts) and from
 * express (the other routes use authentication and the scope check too).
 */
export type ProxyRequest = IncomingMessage & { body?: unknown };
export type ProxyResponse = ServerResponse & { locals: object };
/** `next()` continues, `next(err)` answers the error (express semantics, without 'route'/'router'). */
export type Next = (err?: unknown) => void;
export type Handler = (req: ProxyRequest, res: ProxyResponse, next: Next) => void | Promise<void>;
