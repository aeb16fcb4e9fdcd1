/**
 * Misbehaving clients for scenario 6, on raw sockets: connections that never send a byte, slowloris
 * headers (one header line every few seconds, never finished), and streaming requests whose answer
 * is never read. Each records when and how the proxy ended it.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { sleep } from './harness';

export interface HeldSocket {
  socket: net.Socket;
  openedAt: number;
  /** When the proxy closed it (0 = still open). */
  closedAt: number;
  /** The first bytes the proxy sent (e.g. `HTTP/1.1 408`). */
  firstBytes: string;
}

function hold(socket: net.Socket, held: HeldSocket[]): HeldSocket {
  const h: HeldSocket = { socket, openedAt: Date.now(), closedAt: 0, firstBytes: '' };
  socket.on('data', (b: Buffer) => {
    if (h.firstBytes.length < 64) h.firstBytes += b.toString('latin1').slice(0, 64 - h.firstBytes.length);
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    h.closedAt = Date.now();
  });
  held.push(h);
  return h;
}

/** Opens `n` TCP connections that never send anything (batches of 250, each connected before the next). */
export async function openIdle(port: number, n: number): Promise<HeldSocket[]> {
  const held: HeldSocket[] = [];
  for (let i = 0; i < n; i += 250) {
    const batch = Array.from(
      { length: Math.min(250, n - i) },
      () =>
        new Promise<void>((resolve) => {
          const s = net.connect(port, '127.0.0.1');
          hold(s, held);
          s.once('connect', () => resolve());
          s.once('error', () => resolve());
        }),
    );
    await Promise.all(batch);
  }
  return held;
}

/**
 * Slowloris: `n` connections that start a request and then send one more header line every
 * `intervalMs`, never ending the headers. Returns the sockets and a stop function.
 */
export async function slowloris(port: number, n: number, intervalMs: number) {
  const held: HeldSocket[] = [];
  await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<void>((resolve) => {
          const s = net.connect(port, '127.0.0.1', () => {
            s.write('POST /api/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n');
            resolve();
          });
          hold(s, held);
          s.once('error', () => resolve());
        }),
    ),
  );
  let stopped = false;
  const drip = (async () => {
    let i = 0;
    while (!stopped) {
      await sleep(intervalMs);
      for (const h of held) if (!h.closedAt && !h.socket.destroyed) h.socket.write(`X-Drip-${i}: a\r\n`);
      i++;
    }
  })();
  return {
    held,
    async stop() {
      stopped = true;
      await drip;
    },
  };
}

export interface NeverReader extends HeldSocket {
  /** x-generation-id of the answer (read with its headers, before the client stops reading). */
  generationId: string | null;
  status: number;
}

/**
 * A streaming chat completion whose answer is never read after its headers: the socket is paused
 * once the status line and headers have arrived, so the proxy's writes back up.
 */
export function neverReader(
  port: number,
  apiKey: string,
  body: Record<string, unknown>,
): Promise<NeverReader> {
  return new Promise((resolve) => {
    const payload = JSON.stringify(body);
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(
        `POST /api/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${apiKey}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
      );
    });
    const held: HeldSocket[] = [];
    const h = hold(s, held) as NeverReader;
    h.generationId = null;
    h.status = 0;
    let head = '';
    const onData = (b: Buffer) => {
      head += b.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      s.off('data', onData);
      s.pause(); // never read again
      h.status = Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1] ?? 0);
      h.generationId = /\r\nx-generation-id: (\S+)/i.exec(head.slice(0, end))?.[1] ?? null;
      resolve(h);
    };
    s.on('data', onData);
    s.once('close', () => resolve(h));
  });
}

/** Resident set size of a process in MB (Linux /proc), or null. */
export function rssMb(pid: number | undefined): number | null {
  if (!pid) return null;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** This process's soft limit of open files (Linux /proc), or null. */
export function openFilesLimit(pid: number | 'self' = 'self'): { soft: number; hard: number } | null {
  try {
    const m = /Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/.exec(
      readFileSync(`/proc/${pid}/limits`, 'utf8'),
    );
    if (!m) return null;
    const n = (v: string | undefined) => (v === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(v));
    return { soft: n(m[1]), hard: n(m[2]) };
  } catch {
    return null;
  }
}
