import { Redis, type RedisOptions } from 'ioredis';

type SendCommand = Redis['sendCommand'];

/**
 * A single-node client whose commands of one event-loop turn leave in one socket write, like ioredis
 * auto-pipelining, without its machinery: the first command of a turn corks the socket and an
 * immediate uncorks it, so the commands written meanwhile go out in one `writev`. ioredis's
 * auto-pipelining builds a `Pipeline` per flush (a promise, a result array, a property per defined
 * command), wraps each command in a second promise and a `process.nextTick` callback, and sends one
 * pipeline at a time (commands issued while one awaits its replies wait for them). Here each command
 * is written as ioredis writes any command (`sendCommand`), into a corked socket: what a proxy's
 * admission costs in JavaScript besides its script call is one `cork` and one immediate per turn
 * (bench/json-request-cpu.ts, bench/README.md "JSON request CPU").
 *
 * Replies are read and matched to commands exactly as without batching (ioredis's command queue);
 * a lost connection fails or retries the commands it carried exactly as it does any written command.
 */
export class CorkedRedis extends Redis {
  #corked: Redis['stream'] | null = null;

  /** A node at `url` (`redis://…`, `rediss://…`), with ioredis' replies as a plain `Redis` gives them. */
  constructor(url: string, options: RedisOptions) {
    super(url, options as RedisOptions & { replyMapping?: 'legacy' });
  }

  override sendCommand(...[command, stream]: Parameters<SendCommand>): unknown {
    // Only the client's own writes (a pipeline's `stream` batches itself) on a connected socket.
    if (stream === undefined && this.#corked === null && this.status === 'ready') {
      const socket = this.stream;
      if (socket?.writable) {
        socket.cork();
        this.#corked = socket;
        setImmediate(this.#uncork);
      }
    }
    return super.sendCommand(command, stream);
  }

  readonly #uncork = (): void => {
    const socket = this.#corked;
    this.#corked = null;
    socket?.uncork();
  };
}
