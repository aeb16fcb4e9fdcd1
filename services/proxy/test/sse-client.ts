/** Parsed JSON of unknown shape, walked freely by test assertions. */
// biome-ignore lint/suspicious/noExplicitAny: tests navigate arbitrary response JSON
export type Json = any;

/** Raw SSE reading for tests: every line of the response with its arrival time. */
export interface SseRead {
  status: number;
  headers: Headers;
  /** `data:` payloads in order ([DONE] included). */
  data: string[];
  /** Parsed JSON payloads (everything but [DONE]). */
  chunks: Json[];
  /** Comment lines (`: keep-alive`). */
  comments: string[];
  /** Arrival time (ms since request start) of each `data:` payload. */
  times: number[];
  /** Comments and data in arrival order, for ordering assertions. */
  sequence: string[];
  raw: string;
}

export async function readSse(
  url: string,
  init: RequestInit,
  options: {
    stopAfterData?: number;
    controller?: AbortController;
    /** Called with each `data:` payload as it arrives (its 1-based count). */
    onData?: (payload: string, count: number) => void;
  } = {},
): Promise<SseRead> {
  const start = performance.now();
  const controller = options.controller ?? new AbortController();
  const res = await fetch(url, { ...init, signal: controller.signal });
  const out: SseRead = {
    status: res.status,
    headers: res.headers,
    data: [],
    chunks: [],
    comments: [],
    times: [],
    sequence: [],
    raw: '',
  };
  if (!res.body) return out;
  const decoder = new TextDecoder();
  let buffer = '';
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const text = decoder.decode(value, { stream: true });
      out.raw += text;
      buffer += text;
      let nl = buffer.indexOf('\n');
      while (nl !== -1) {
        const line = buffer.slice(0, nl).replace(/\r$/, '');
        buffer = buffer.slice(nl + 1);
        if (line.startsWith('data: ')) {
          const payload = line.slice(6);
          out.data.push(payload);
          out.times.push(performance.now() - start);
          out.sequence.push('data');
          options.onData?.(payload, out.data.length);
          if (payload !== '[DONE]') {
            try {
              out.chunks.push(JSON.parse(payload));
            } catch {
              out.chunks.push({ unparsable: payload });
            }
          }
        } else if (line.startsWith(':')) {
          out.comments.push(line);
          out.sequence.push('comment');
        }
        nl = buffer.indexOf('\n');
      }
      if (options.stopAfterData !== undefined && out.data.length >= options.stopAfterData) {
        controller.abort();
        break;
      }
    }
  } catch (err) {
    if (!controller.signal.aborted) throw err;
  }
  return out;
}
