/**
 * Clients that walk away (issue 22): a chat completion abandoned at a chosen point, for the tests of
 * what a cancelled request is billed. Each returns the request id (X-Generation-Id) once the client
 * has gone, or null when the request was abandoned before its headers came back.
 */

/** Where the client goes away. */
type AbandonPoint =
  /** Before the response headers (the request is at the provider). */
  | 'before-headers'
  /** After the first content delta of a stream. */
  | 'first-content'
  /** After the first chunk with a finish_reason (a stream of `n` > 1 has more to come). */
  | 'first-finish'
  /** After `afterData` data events of a stream. */
  | 'mid-stream';

export interface AbandonOptions {
  url: string;
  key: string;
  body: Record<string, unknown>;
  point: AbandonPoint;
  /** 'mid-stream': data events read before leaving (default 3). */
  afterData?: number;
  /** 'before-headers': resolves when the request is at the provider (e.g. the simulator saw it). */
  atProvider?: () => Promise<void>;
}

export interface Abandoned {
  /** X-Generation-Id, null when the client left before the headers. */
  id: string | null;
  /** Data events read before leaving. */
  dataRead: number;
}

/** Sends a completion and goes away at `point` (the fetch is aborted; its socket closes). */
export async function abandon(o: AbandonOptions): Promise<Abandoned> {
  const controller = new AbortController();
  const pending = fetch(`${o.url}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(o.body),
    signal: controller.signal,
  });
  if (o.point === 'before-headers') {
    pending.catch(() => {});
    await o.atProvider?.();
    controller.abort();
    return { id: null, dataRead: 0 };
  }
  const res = await pending;
  const id = res.headers.get('x-generation-id');
  if (!res.ok || !res.body) {
    await res.text();
    throw new Error(`abandon: HTTP ${res.status}`);
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let dataRead = 0;
  const leaveAfter = (payload: string): boolean => {
    if (payload === '[DONE]') return false;
    const chunk = JSON.parse(payload) as {
      choices?: Array<{ delta?: { content?: unknown }; finish_reason?: unknown }>;
    };
    const choices = chunk.choices ?? [];
    if (o.point === 'first-content')
      return choices.some((c) => typeof c.delta?.content === 'string' && c.delta.content.length > 0);
    if (o.point === 'first-finish') return choices.some((c) => typeof c.finish_reason === 'string');
    return dataRead >= (o.afterData ?? 3);
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end = buffer.indexOf('\n\n');
      while (end !== -1) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf('\n\n');
        for (const line of event.split('\n')) {
          if (!line.startsWith('data: ')) continue;
          dataRead++;
          if (leaveAfter(line.slice(6))) {
            controller.abort();
            return { id, dataRead };
          }
        }
      }
    }
  } catch (err) {
    if (!controller.signal.aborted) throw err;
  }
  throw new Error(`abandon: the stream ended before the point '${o.point}' (${dataRead} data events)`);
}
