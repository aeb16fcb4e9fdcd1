import type { RequestHandler, Response } from 'express';
import type { Completion } from '../pipeline/completion';
import type { RequestSeries } from './definitions';

/**
 * What the metrics read of a completion when its response closes (set by the pipeline's admit stage):
 * upstreamStartedAt / upstreamEndedAt, performance.now() when the first upstream attempt was sent and
 * when the upstream body ended; firstTokenAt, of the first byte of the answer's content (0: none).
 */
type CompletionTiming = Pick<
  Completion,
  'model' | 'provider' | 'request' | 'upstreamStartedAt' | 'upstreamEndedAt' | 'firstTokenAt'
>;

interface RouteLocals {
  route?: string;
  /** performance.now() at the start of the request. */
  metricsStart?: number;
  /** The completion of a door request (its timing is read at close). */
  completion?: CompletionTiming;
}

/** Names the route of a request for the metrics labels (never the raw path: bounded cardinality). */
export const routeName =
  (route: string): RequestHandler =>
  (_req, res, next) => {
    (res.locals as RouteLocals).route = route;
    next();
  };

/**
 * The per-request observer: times a request from `track` to its response's close and, for a
 * completion, its provider wait, the gateway's own time and the time to the first token. Hot path:
 * one listener function for every response, label children bound once, status labels made once.
 */
export class ResponseObserver {
  readonly #series: RequestSeries;
  /** HTTP statuses as label values, made once each. */
  readonly #statusText: string[] = [];
  /** Express middleware: times every request; handlers name their route in res.locals.route. */
  readonly track: RequestHandler;

  constructor(series: RequestSeries) {
    this.#series = series;
    const closed = (res: Response) => this.closed(res);
    // Hoisted: one listener function for every response (reads its state from res.locals).
    function onClose(this: Response) {
      closed(this);
    }
    this.track = (_req, res, next) => {
      (res.locals as RouteLocals).metricsStart = performance.now();
      res.once('close', onClose);
      next();
    };
  }

  /** What `track` records when the response closes (also called by the doors, served without express). */
  closed(res: { locals: object; statusCode: number }): void {
    const locals = res.locals as RouteLocals;
    const route = locals.route ?? 'other';
    const status = res.statusCode;
    this.#series.requests.labels(route, this.#status(status)).inc();
    const start = locals.metricsStart;
    if (start === undefined) return;
    const end = performance.now();
    this.#series.duration.labels(route).observe((end - start) / 1000);
    if (locals.completion) this.#completion(locals.completion, status, start, end);
  }

  /** The completion's timings, read when its response closes. */
  #completion(c: CompletionTiming, status: number, start: number, end: number): void {
    const { completions, upstream, overhead, ttft } = this.#series;
    const model = c.model.id;
    const provider = c.provider.name;
    completions.labels(model, provider, this.#status(status)).inc();
    if (c.upstreamStartedAt > 0) {
      const upstreamEnd = c.upstreamEndedAt > 0 ? c.upstreamEndedAt : end;
      const waited = upstreamEnd - c.upstreamStartedAt;
      upstream
        .labels('chat', provider, model, status < 400 ? '' : this.#status(status))
        .observe(waited / 1000);
      overhead.labels(c.request.stream ? 'true' : 'false').observe(Math.max(0, end - start - waited) / 1000);
    }
    if (c.firstTokenAt > 0 && status < 400)
      ttft.labels('chat', provider, model).observe((c.firstTokenAt - start) / 1000);
  }

  #status(status: number): string {
    let text = this.#statusText[status];
    if (text === undefined) {
      text = String(status);
      this.#statusText[status] = text;
    }
    return text;
  }
}
