import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Which process holds which TCP socket of a port, from Linux's /proc (the proxy's `WORKERS` tests:
 * each worker listens on its own SO_REUSEPORT socket, so only the kernel knows who serves what).
 */

/** The children of `pid` (its worker processes, for a cluster primary). */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** Socket inodes of `pid`'s open descriptors. */
function socketInodes(pid: number): Set<string> {
  const out = new Set<string>();
  let fds: string[] = [];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out;
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) out.add(m[1] as string);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

const LISTEN = '0A';
const ESTABLISHED = '01';

/** Inodes (and remote ports) of the IPv4 TCP sockets whose local port is `port`, in `state` (/proc/net/tcp). */
function tcpInodes(port: number, state: string): Map<string, number> {
  const out = new Map<string, number>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10) continue;
    if (f[1]?.split(':')[1] === hexPort && f[3] === state)
      out.set(f[9] as string, Number.parseInt(f[2]?.split(':')[1] ?? '0', 16));
  }
  return out;
}

/**
 * The client ports of the connections of `port` each of `pids` accepted (established), so a client
 * that knows its socket's local port knows which process serves it.
 */
export function clientPortsByProcess(port: number, pids: number[]): Map<number, Set<number>> {
  const established = tcpInodes(port, ESTABLISHED);
  return new Map(
    pids.map((pid) => {
      const mine = socketInodes(pid);
      return [pid, new Set([...established].filter(([inode]) => mine.has(inode)).map(([, peer]) => peer))];
    }),
  );
}

/** Whether `pid` holds a listening socket of `port`. */
export function listensOn(pid: number, port: number): boolean {
  const listening = tcpInodes(port, LISTEN);
  return [...socketInodes(pid)].some((i) => listening.has(i));
}
