import { AppError, badRequest } from '@tollgate/errors';
import type { Handler, ProxyRequest } from './types';

/**
 * A lean JSON body reader for the hot route (POST /chat/completions), instead of express.json():
 * no content-type negotiation, no charset/iconv layer, one Buffer → string → JSON.parse. Any
 * Content-Type is accepted (clients that omit it still work); compressed bodies are refused (415).
 * Errors are AppErrors (400 invalid JSON, 413 too large), answered by the one error handler.
 */
export function parseByteLimit(limit: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?$/i.exec(limit.trim());
  if (!m) throw new Error(`invalid byte size "${limit}"`);
  const unit = (m[2] ?? 'b').toLowerCase();
  const factor = unit === 'gb' ? 1024 ** 3 : unit === 'mb' ? 1024 ** 2 : unit === 'kb' ? 1024 : 1;
  return Math.floor(Number(m[1]) * factor);
}

const tooLarge = () => new AppError('payload_too_large', 'Request body is too large');

/**
 * Deepest nesting of arrays/objects a request body may have. JSON.parse takes any depth, but
 * JSON.stringify (forwarding, token counting) overflows the stack on deep values (500/502 before);
 * real chat requests nest a handful of levels (tool parameter schemas perhaps a dozen).
 */
const MAX_JSON_DEPTH = 64;

/** True when `value` nests deeper than `max` (iterative: no recursion on hostile input). */
function nestedDeeperThan(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const stack: unknown[] = [value];
  const depths: number[] = [1];
  while (stack.length > 0) {
    const v = stack.pop() as object;
    const d = depths.pop() as number;
    if (d > max) return true;
    const children = Array.isArray(v) ? v : Object.values(v);
    for (const c of children) {
      if (typeof c === 'object' && c !== null) {
        stack.push(c);
        depths.push(d + 1);
      }
    }
  }
  return false;
}

/**
 * Reads `req`'s JSON body into `req.body` (undefined when empty), then calls `done()`; or `done(err)`
 * with the AppError to answer (415 compressed, 413 over `limitBytes`, 400 invalid JSON, too deep or
 * aborted). `done` is called exactly once.
 */
function readJsonBody(req: ProxyRequest, limitBytes: number, done: (err?: AppError) => void): void {
  const encoding = req.headers['content-encoding'];
  if (encoding && encoding !== 'identity') {
    done(new AppError('unsupported_media_type', 'Compressed request bodies are not supported'));
    return;
  }
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limitBytes) {
    req.resume();
    done(tooLarge());
    return;
  }
  let first: Buffer | null = null;
  let rest: Buffer[] | null = null;
  let size = 0;
  let failed = false;
  req.on('data', (chunk: Buffer) => {
    if (failed) return;
    size += chunk.length;
    if (size > limitBytes) {
      failed = true;
      done(tooLarge());
      return;
    }
    if (first === null) first = chunk;
    else if (rest === null) rest = [first, chunk];
    else rest.push(chunk);
  });
  req.once('error', () => {
    if (failed) return;
    failed = true;
    done(badRequest('Request aborted'));
  });
  req.once('end', () => {
    if (failed) return;
    const buf: Buffer | null = rest ? Buffer.concat(rest) : first;
    if (buf === null || buf.length === 0) {
      req.body = undefined;
      done();
      return;
    }
    try {
      req.body = JSON.parse(buf.toString('utf8'));
    } catch {
      done(badRequest('Request body is not valid JSON'));
      return;
    }
    if (nestedDeeperThan(req.body, MAX_JSON_DEPTH)) {
      done(badRequest(`Request body is nested too deeply (at most ${MAX_JSON_DEPTH} levels)`));
      return;
    }
    done();
  });
}

/** readJsonBody as a route step (the chat route as express serves it). */
export function jsonBodyReader(limitBytes: number): Handler {
  return (req, _res, next) => readJsonBody(req, limitBytes, next);
}
