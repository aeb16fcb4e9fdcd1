/** Test helpers: read an SSE body into its `data:` payloads. */
export interface SseRead {
  events: string[];
  /** Parsed JSON events ([DONE] excluded). */
  json: Record<string, unknown>[];
  done: boolean;
  raw: string;
}

export function parseSse(raw: string): SseRead {
  const events = raw
    .split('\n\n')
    .map((e) => e.trim())
    .filter(Boolean)
    .map((e) => {
      if (!e.startsWith('data: ')) throw new Error(`not an SSE data line: ${e}`);
      return e.slice(6);
    });
  const json = events.filter((e) => e !== '[DONE]').map((e) => JSON.parse(e) as Record<string, unknown>);
  return { events, json, done: events.at(-1) === '[DONE]', raw };
}

/** Reads a body that may be cut: returns what arrived and whether the read failed. */
export async function readUntilCut(res: Response): Promise<{ raw: string; cut: boolean }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let raw = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { raw, cut: false };
      raw += decoder.decode(value, { stream: true });
    }
  } catch {
    return { raw, cut: true };
  }
}

export const chat = (content: string, extra: Record<string, unknown> = {}) => ({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content }],
  ...extra,
});

/** Response JSON probed field by field in assertions. */
// biome-ignore lint/suspicious/noExplicitAny: tests walk arbitrary response JSON; a failing probe fails the test
export type Json = any;
