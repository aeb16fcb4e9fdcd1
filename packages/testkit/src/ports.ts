import { createServer } from 'node:net';

/**
 * A port nobody listens on right now, on 127.0.0.1 (for a service another must know the address of
 * before it starts: the OS picks it, the probe closes it again).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}
