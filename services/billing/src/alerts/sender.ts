import type { LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import type { UrlGuard } from './url-guard';

/** What one attempt gave: the status (null when no answer came), the time it took, why it failed. */
export interface AttemptResult {
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  delivered: boolean;
}

export interface WebhookMessage {
  /** `webhook-id`: the same on every retry of this alert to this endpoint. */
  id: string;
  url: string;
  secret: string;
  body: string;
}

/**
 * Sends one Standard Webhooks message (`webhook-id`, `webhook-timestamp`, `webhook-signature` from
 * the `standardwebhooks` library) with a deadline. Connections are opened only to addresses the URL
 * guard accepted at connect time (its lookup replaces DNS), so a name that re-resolves to a private
 * address after the endpoint was saved is still refused; redirects are not followed. Any 2xx is a
 * delivery; anything else (status, refusal, timeout) is a failed attempt.
 */
export function createWebhookSender(options: { guard: UrlGuard; timeoutMs: number }) {
  const lookup: LookupFunction = (hostname, opts, callback) => {
    options.guard.resolve(new URL(`http://${hostname.includes(':') ? `[${hostname}]` : hostname}`)).then(
      ({ address, family }) => {
        if ((opts as { all?: boolean }).all) (callback as never as AllCallback)(null, [{ address, family }]);
        else callback(null, address, family);
      },
      (err: Error) => callback(err as NodeJS.ErrnoException, '', 4),
    );
  };
  const agent = new Agent({
    connect: { lookup, timeout: options.timeoutMs },
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    keepAliveTimeout: 4_000,
  });

  return {
    async send(m: WebhookMessage): Promise<AttemptResult> {
      const started = performance.now();
      const latency = () => Math.round(performance.now() - started);
      const at = new Date();
      try {
        const signature = new Webhook(m.secret).sign(m.id, at, m.body);
        const res = await request(m.url, {
          method: 'POST',
          dispatcher: agent,
          headers: {
            'content-type': 'application/json',
            'user-agent': 'Tollgate-Webhooks/1',
            'webhook-id': m.id,
            'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
            'webhook-signature': signature,
          },
          body: m.body,
          signal: AbortSignal.timeout(options.timeoutMs),
        });
        await res.body.dump({ limit: 64 * 1024 }).catch(() => {});
        const ok = res.statusCode >= 200 && res.statusCode < 300;
        return {
          statusCode: res.statusCode,
          latencyMs: latency(),
          error: ok ? null : `HTTP ${res.statusCode}`,
          delivered: ok,
        };
      } catch (err) {
        const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
        const why = e.cause?.message ?? e.message ?? String(err);
        const code = e.cause?.code ?? e.code;
        return {
          statusCode: null,
          latencyMs: latency(),
          error: (code ? `${code}: ${why}` : why).slice(0, 500),
          delivered: false,
        };
      }
    },
    close: () => agent.close(),
  };
}

type AllCallback = (
  err: NodeJS.ErrnoException | null,
  addresses: { address: string; family: number }[],
) => void;
export type WebhookSender = ReturnType<typeof createWebhookSender>;
