/**
 * The routes an express 5 app registers, read from its router's layers (the `router` package 2.x:
 * a route layer has `route.path` and `route.methods`; a mounted router has `rawPath` and its own
 * `stack`). What tests compare with the OpenAPI document.
 */
interface Layer {
  rawPath?: string | string[];
  slash?: boolean;
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle: { stack?: Layer[] };
}

export interface RegisteredRoute {
  /** Lower case (`get`, `post`, …); `all` for `router.all`. */
  method: string;
  /** The express path, mounts included (`/api/v1/keys/{*rest}`, `/keys/:hash`). */
  path: string;
}

const list = <T>(x: T | T[]): T[] => (Array.isArray(x) ? x : [x]);

/** Every (method, path) the app routes, routers mounted with `app.use(path, router)` walked into. */
export function expressRoutes(app: unknown): RegisteredRoute[] {
  const router = (app as { router?: { stack?: Layer[] } }).router;
  if (!router?.stack) throw new Error('not an express 5 app: no router stack');
  const out: RegisteredRoute[] = [];
  const walk = (stack: Layer[], prefixes: string[]) => {
    for (const layer of stack) {
      if (layer.route) {
        const methods = Object.keys(layer.route.methods).filter((m) => layer.route?.methods[m]);
        for (const prefix of prefixes)
          for (const path of list(layer.route.path))
            for (const m of methods) out.push({ method: m === '_all' ? 'all' : m, path: `${prefix}${path}` });
      } else if (layer.handle.stack) {
        const mounts = layer.slash || layer.rawPath === undefined ? [''] : list(layer.rawPath);
        walk(
          layer.handle.stack,
          prefixes.flatMap((p) => mounts.map((m) => `${p}${m === '/' ? '' : m}`)),
        );
      }
    }
  };
  walk(router.stack, ['']);
  return out;
}

/**
 * A path template with its parameters unnamed, to compare an express path with an OpenAPI one:
 * `/keys/:hash` and `/keys/{hash}` → `/keys/{}`.
 */
export const template = (path: string): string => path.replace(/:\w+|\{\w+\}/g, '{}');
