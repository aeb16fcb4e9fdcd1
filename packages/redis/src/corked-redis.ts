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
/** The part of an ioredis command the timeout reads and sets (ioredis's own `Command` fields). */
interface TimedCommand {
  isSettled: boolean;
  reject(err: Error): void;
  _commandTimeoutTimer?: NodeJS.Timeout;
}

/** How many times a command's timeout is re-armed because the event loop was late, not Redis. */
const MOST_REARMS = 3;

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
    const ms = this.options.commandTimeout;
    if (ms !== undefined && ms > 0) lagTolerantTimeout(command as unknown as TimedCommand, ms);
    return super.sendCommand(command, stream);
  }

  readonly #uncork = (): void => {
    const socket = this.#corked;
    this.#corked = null;
    socket?.uncork();
  };
}

/**
 * `commandTimeout`, measured while this process could have read the reply. ioredis's own timer
 * rejects a command when it fires; but when the event loop is late (a process relaying thousands of
 * streams, a turn taking longer than the timeout), timers run before the turn's reads, so a reply
 * already in the socket is never looked at and a healthy Redis is reported down: 9–188 admissions of
 * 10,000 streams answered 503 "Spend counters are unavailable" (bench/README.md, session 14). So when
 * the timer fires the decision waits for that turn's reads (an immediate), and a timer that fired
 * late by more than a quarter of the timeout is re-armed (at most MOST_REARMS times: a Redis that does
 * not answer still fails within a few timeouts however late the loop runs); one that fired on time
 * and found no reply after the reads rejects as ioredis does. Set before ioredis's `sendCommand`, whose own timer
 * then stays unset (it sets one only when none is); settling the command clears it (ioredis).
 */
function lagTolerantTimeout(command: TimedCommand, ms: number): void {
  if (command._commandTimeoutTimer !== undefined) return;
  let due = performance.now() + ms;
  let rearms = 0;
  let firedAt = 0;
  // After the turn's reads (the check phase follows the poll phase): a reply that came meanwhile has
  // settled the command by now.
  const decide = (): void => {
    if (command.isSettled) return;
    if (firedAt - due > ms / 4 && rearms < MOST_REARMS) {
      rearms++;
      due = performance.now() + ms;
      command._commandTimeoutTimer = setTimeout(fire, ms);
      return;
    }
    command.reject(new Error('Command timed out'));
  };
  const fire = (): void => {
    if (command.isSettled) return;
    firedAt = performance.now();
    setImmediate(decide);
  };
  command._commandTimeoutTimer = setTimeout(fire, ms);
}
