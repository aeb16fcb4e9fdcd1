import type { ServerResponse } from 'node:http';

/** The head of every streamed answer (whatever its door's events). */
export const SSE_HEAD = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
};

/** Commits the 200 and the SSE headers (the X-Generation-Id header was set earlier). */
export function writeSseHead(res: ServerResponse): void {
  if (res.headersSent) return;
  res.writeHead(200, SSE_HEAD);
  res.flushHeaders();
}
