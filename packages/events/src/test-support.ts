import { randomBytes, randomUUID } from 'node:crypto';
import amqp from 'amqplib';
import type { EventsLogger } from './logger';
import { usagePartition } from './partition';
import { type UsageEventV1, usageMessageBodies } from './usage-event';

/** Test helpers (not exported from the package). */

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields: Record<string, unknown>;
}

/** A logger that records every line (to assert on what the operator would see). */
export function recordingLogger(): EventsLogger & {
  lines: LogLine[];
  messages(level?: LogLine['level']): string[];
} {
  const lines: LogLine[] = [];
  const make = (bindings: Record<string, unknown>): EventsLogger => {
    const at =
      (level: LogLine['level']) =>
      (a: object | string, b?: string): void => {
        if (typeof a === 'string') lines.push({ level, msg: a, fields: { ...bindings } });
        else lines.push({ level, msg: b ?? '', fields: { ...bindings, ...(a as Record<string, unknown>) } });
      };
    return {
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      child: (more) => make({ ...bindings, ...more }),
    };
  };
  return Object.assign(make({}), {
    lines,
    messages: (level?: LogLine['level']) =>
      lines.filter((l) => !level || l.level === level).map((l) => l.msg),
  });
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function requestId(): string {
  const bytes = randomBytes(20);
  let tail = '';
  for (const b of bytes) tail += ALNUM[b % ALNUM.length];
  return `gen-${Math.floor(Date.now() / 1000)}-${tail}`;
}

/**
 * `count` random account ids that together cover every one of `partitions` partitions (an account's
 * partition is a hash of its id, so plain random ids all land in one partition now and then).
 */
export function accountsCoveringPartitions(count: number, partitions: number): string[] {
  if (count < partitions) throw new Error(`${count} accounts cannot cover ${partitions} partitions`);
  for (;;) {
    const accounts = Array.from({ length: count }, () => randomUUID());
    if (new Set(accounts.map((a) => usagePartition(a, partitions))).size === partitions) return accounts;
  }
}

export function sampleEvent(overrides: Partial<UsageEventV1> = {}): UsageEventV1 {
  const now = new Date().toISOString();
  return {
    type: 'usage',
    version: 1,
    id: requestId(),
    account_id: '7f1c2a9e-3b4d-4e5f-8a6b-1c2d3e4f5a6b',
    key_id: '0b9a8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d',
    model: 'openai/gpt-4o-mini',
    provider_name: 'openai',
    upstream_model: 'gpt-4o-mini',
    upstream_id: 'chatcmpl-123',
    app: null,
    streamed: true,
    cancelled: false,
    finish_reason: 'stop',
    usage_source: 'provider',
    tokens: { prompt: 12, completion: 34, cached: 0, cache_write: 0, reasoning: 0 },
    cost: '0.0000222',
    is_byok: false,
    error: null,
    started_at: now,
    finished_at: now,
    latency_ms: 120,
    generation_time_ms: 900,
    ...overrides,
  };
}

/** Reads (and removes) every message currently in `queue`, in queue order. */
export async function drainQueue(url: string, queue: string): Promise<amqp.ConsumeMessage[]> {
  const conn = await amqp.connect(url);
  try {
    const ch = await conn.createChannel();
    const { messageCount } = await ch.checkQueue(queue);
    const out: amqp.ConsumeMessage[] = [];
    if (messageCount === 0) return out;
    await new Promise<void>((resolve) => {
      void ch.consume(
        queue,
        (msg) => {
          if (msg) out.push(msg);
          if (!msg || out.length >= messageCount) resolve();
        },
        { noAck: true },
      );
    });
    return out;
  } finally {
    await conn.close().catch(() => {});
  }
}

/** One event of a drained message: its body, and its id as `properties.messageId`. */
export interface DrainedEvent {
  content: Buffer;
  properties: amqp.MessageProperties;
  /** The message that carried it (several events share a `usage.batch.v1` message). */
  message: amqp.ConsumeMessage;
}

/** Like `drainQueue`, one entry per event: batch messages are split into their events. */
export async function drainEvents(url: string, queue: string): Promise<DrainedEvent[]> {
  const out: DrainedEvent[] = [];
  for (const message of await drainQueue(url, queue)) {
    for (const content of usageMessageBodies(message.content, message.properties.type)) {
      let id: unknown = message.properties.messageId;
      try {
        id = (JSON.parse(content.toString('utf8')) as { id?: unknown }).id ?? id;
      } catch {
        // not JSON: keep the message's id
      }
      out.push({ content, properties: { ...message.properties, messageId: id }, message });
    }
  }
  return out;
}

export async function queueDepth(url: string, queue: string): Promise<number> {
  const conn = await amqp.connect(url);
  try {
    const ch = await conn.createChannel();
    return (await ch.checkQueue(queue)).messageCount;
  } finally {
    await conn.close().catch(() => {});
  }
}
