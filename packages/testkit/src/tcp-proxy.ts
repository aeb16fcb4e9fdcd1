import net from 'node:net';

export interface TcpProxy {
  /** The local port (stable across stop/start). */
  readonly port: number;
  /** `base` (e.g. AMQP_URL) with host and port replaced by this proxy's. */
  url(base: string): string;
  /** Destroys every open connection and refuses new ones (the listener is closed): an outage. */
  stop(): Promise<void>;
  /** Accepts and forwards connections again, on the same port. */
  start(): Promise<void>;
  /** Stops for good. */
  close(): Promise<void>;
  /** Open client connections. */
  readonly connections: number;
}

/**
 * A tiny TCP forwarder for outage tests: point the code under test at `proxy.url(AMQP_URL)`, then
 * `stop()` to make the server unreachable (sockets reset, connections refused) and `start()` to
 * bring it back, without touching the real server other tests share.
 */
export async function createTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const clients = new Set<net.Socket>();
  let server: net.Server | null = null;
  let port = 0;

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        sockets.add(client);
        sockets.add(upstream);
        clients.add(client);
        const end = () => {
          client.destroy();
          upstream.destroy();
          sockets.delete(client);
          sockets.delete(upstream);
          clients.delete(client);
        };
        client.on('error', end).on('close', end);
        upstream.on('error', end).on('close', end);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        s.off('error', reject);
        const address = s.address();
        if (address && typeof address === 'object') port = address.port;
        server = s;
        resolve();
      });
    });

  const stop = async () => {
    const s = server;
    server = null;
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    clients.clear();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };

  await listen();

  return {
    get port() {
      return port;
    },
    get connections() {
      return clients.size;
    },
    url(base: string) {
      const u = new URL(base);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString().replace(/\/$/, '');
    },
    stop,
    async start() {
      if (!server) await listen();
    },
    close: stop,
  };
}

/** Host and port of an amqp:// (or any) URL, with the scheme's default port. */
export function hostPortOf(url: string, defaultPort = 5672): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname || '127.0.0.1', port: u.port ? Number(u.port) : defaultPort };
}
