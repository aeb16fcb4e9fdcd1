import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The request and response the front doors work with: Node's own, plus the two fields their steps
 * share (the parsed body, and `locals`). An express Request/Response is one of these, so the same
 * handlers serve the doors from the request listener (http/doors.ts) and the other routes from
 * express (they use authentication and the scope check too).
 */
export type ProxyRequest = IncomingMessage & { body?: unknown };
export type ProxyResponse = ServerResponse & { locals: object };
/** `next()` continues, `next(err)` answers the error (express semantics, without 'route'/'router'). */
export type Next = (err?: unknown) => void;
export type Handler = (req: ProxyRequest, res: ProxyResponse, next: Next) => void | Promise<void>;
