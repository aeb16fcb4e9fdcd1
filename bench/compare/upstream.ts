/**
 * The benchmark's upstream: a small, fast, independent OpenAI-compatible server (node:http only, no
 * Tollgate code), so every gateway in bench/compare.ts forwards to the same thing.
 *
 *   POST …/chat/completions   non-streamed: one fixed chat.completion JSON (with usage)
 *                             `stream: true`: SSE chunks, then a usage chunk, then `data: [DONE]`
 * The model name picks the stream's shape: `paced-<chunks>-<ms>` sends <chunks> content chunks
 * <ms> apart (one shared timer per pace, not one per stream: 10,000 open streams cost little here);
 * anything else sends 16 chunks at once. `GET /v1/models` answers a one-model list.
 *   POST …/embeddings         one fixed OpenAI embeddings JSON
 *   POST …/messages           Anthropic's Messages API: one fixed Message, or (`stream: true`) its events
 *                             (message_start … 16 text deltas … message_delta with usage, message_stop)
 *   POST …/responses          OpenAI's Responses API: one fixed Response, or (`stream: true`) its typed
 *                             events (response.created … 16 output_text deltas … response.completed)
 * Streamed answers of every API are the same size in content (16 deltas of `tok `) and written the
 * same way (the head events, one write per delta, the tail with the end), so the doors phase
 * (bench/compare/doors.ts) compares the gateway, not the upstream.
 *
 * Run as a child process: prints `{"port": N}` on stdout once listening; stops on SIGTERM.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const CONTENT = 'Hello from the bench upstream. ';
const USAGE = { prompt_tokens: 24, completion_tokens: 16, total_tokens: 40 };

const completionJson = (model: string) =>
  Buffer.from(
    JSON.stringify({
      id: 'chatcmpl-bench',
      object: 'chat.completion',
      created: 1_763_856_000,
      model,
      choices: [
        { index: 0, message: { role: 'assistant', content: CONTENT.repeat(2) }, finish_reason: 'stop' },
      ],
      usage: USAGE,
    }),
  );
const jsonCache = new Map<string, Buffer>();
/** `POST …/embeddings` (OpenAI's shape) and `POST …/messages` (Anthropic's, non-streamed). */
const embeddingJson = Buffer.from(
  JSON.stringify({
    object: 'list',
    data: [{ object: 'embedding', index: 0, embedding: Array.from({ length: 16 }, (_, i) => i / 16) }],
    model: 'embed',
    usage: { prompt_tokens: 8, total_tokens: 8 },
  }),
);
const messageJson = Buffer.from(
  JSON.stringify({
    id: 'msg_bench',
    type: 'message',
    role: 'assistant',
    model: 'claude-bench',
    content: [{ type: 'text', text: CONTENT.repeat(2) }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 24, output_tokens: 16 },
  }),
);

/** `POST …/responses` (OpenAI's Responses API, non-streamed): the same text and usage as the chat answer. */
const responseObject = (model: string, text: string, outputTokens: number) => ({
  id: 'resp_bench',
  object: 'response',
  created_at: 1_763_856_000,
  status: 'completed',
  error: null,
  incomplete_details: null,
  model,
  output: [
    {
      id: 'msg_bench',
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text, annotations: [] }],
    },
  ],
  parallel_tool_calls: true,
  store: false,
  usage: {
    input_tokens: USAGE.prompt_tokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: USAGE.prompt_tokens + outputTokens,
  },
});
const responseJson = Buffer.from(JSON.stringify(responseObject('gpt-bench', CONTENT.repeat(2), 16)));

/** A streamed answer: the events before the first delta, one delta (written 16 times), the rest. */
interface StreamShape {
  first: Buffer;
  content: Buffer;
  tail: Buffer;
}
const STREAM_DELTAS = 16;
const sse = (type: string, data: unknown) => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;

/** Anthropic's Messages stream events. */
const messagesShape: StreamShape = {
  first: Buffer.from(
    sse('message_start', {
      type: 'message_start',
      message: {
        id: 'msg_bench',
        type: 'message',
        role: 'assistant',
        model: 'claude-bench',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 24, output_tokens: 1 },
      },
    }) +
      sse('content_block_start', {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'text', text: '' },
      }) +
      sse('ping', { type: 'ping' }),
  ),
  content: Buffer.from(
    sse('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: 'tok ' },
    }),
  ),
  tail: Buffer.from(
    sse('content_block_stop', { type: 'content_block_stop', index: 0 }) +
      sse('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: STREAM_DELTAS },
      }) +
      sse('message_stop', { type: 'message_stop' }),
  ),
};

/**
 * OpenAI's Responses stream events. Each carries its `sequence_number`: the 16 deltas here share one
 * (the bench writes the same bytes each time; no client of the bench reads the numbers).
 */
const responsesShape: StreamShape = (() => {
  const text = 'tok '.repeat(STREAM_DELTAS);
  const done = responseObject('gpt-bench', text, STREAM_DELTAS);
  const started = { ...done, status: 'in_progress', output: [], usage: null };
  const item = done.output[0] as (typeof done.output)[number];
  const at = { item_id: item.id, output_index: 0, content_index: 0 };
  let seq = 0;
  const ev = (type: string, fields: Record<string, unknown>) =>
    sse(type, { type, sequence_number: seq++, ...fields });
  const first =
    ev('response.created', { response: started }) +
    ev('response.in_progress', { response: started }) +
    ev('response.output_item.added', {
      output_index: 0,
      item: { ...item, status: 'in_progress', content: [] },
    }) +
    ev('response.content_part.added', { ...at, part: { type: 'output_text', text: '', annotations: [] } });
  const content = ev('response.output_text.delta', { ...at, delta: 'tok ', logprobs: [] });
  seq += STREAM_DELTAS - 1;
  const tail =
    ev('response.output_text.done', { ...at, text, logprobs: [] }) +
    ev('response.content_part.done', { ...at, part: item.content[0] }) +
    ev('response.output_item.done', { output_index: 0, item }) +
    ev('response.completed', { response: done });
  return { first: Buffer.from(first), content: Buffer.from(content), tail: Buffer.from(tail) };
})();

const chunk = (model: string, delta: Record<string, unknown>, finish: string | null) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion.chunk',
    created: 1_763_856_000,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  })}\n\n`;

const shapes = new Map<string, StreamShape>();
function shapeOf(model: string, chunks: number): StreamShape {
  let s = shapes.get(model);
  if (!s) {
    const usage = { ...USAGE, completion_tokens: chunks, total_tokens: USAGE.prompt_tokens + chunks };
    s = {
      first: Buffer.from(chunk(model, { role: 'assistant', content: '' }, null)),
      content: Buffer.from(chunk(model, { content: 'tok ' }, null)),
      tail: Buffer.from(
        `${chunk(model, {}, 'stop')}data: ${JSON.stringify({
          id: 'chatcmpl-bench',
          object: 'chat.completion.chunk',
          created: 1_763_856_000,
          model,
          choices: [],
          usage,
        })}\n\ndata: [DONE]\n\n`,
      ),
    };
    shapes.set(model, s);
  }
  return s;
}

interface Paced {
  res: http.ServerResponse;
  left: number;
  shape: StreamShape;
}
/** One timer per pace (ms): every tick writes the next chunk of each of its streams. */
const pacers = new Map<number, { streams: Set<Paced>; timer: NodeJS.Timeout }>();
function pace(ms: number, p: Paced) {
  let pacer = pacers.get(ms);
  if (!pacer) {
    const streams = new Set<Paced>();
    const timer = setInterval(() => {
      for (const s of streams) {
        if (s.res.destroyed) {
          streams.delete(s);
          continue;
        }
        s.res.write(s.shape.content);
        if (--s.left <= 0) {
          s.res.end(s.shape.tail);
          streams.delete(s);
        }
      }
      if (streams.size === 0) {
        clearInterval(timer);
        pacers.delete(ms);
      }
    }, ms);
    pacer = { streams, timer };
    pacers.set(ms, pacer);
  }
  pacer.streams.add(p);
}

const SSE_HEAD = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
const JSON_HEAD = { 'content-type': 'application/json' };
const PACED = /^paced-(\d+)-(\d+)$/;
const models = Buffer.from(JSON.stringify({ object: 'list', data: [{ id: 'bench', object: 'model' }] }));

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url?.endsWith('/models')) {
    res.writeHead(200, JSON_HEAD).end(models);
    return;
  }
  const url = req.url ?? '';
  // The doors phase (bench/compare/doors.ts): embeddings, Anthropic's Messages, OpenAI's Responses.
  const api = url.endsWith('/chat/completions')
    ? 'chat'
    : url.endsWith('/messages')
      ? 'messages'
      : url.endsWith('/responses')
        ? 'responses'
        : url.endsWith('/embeddings')
          ? 'embeddings'
          : null;
  if (req.method !== 'POST' || api === null) {
    res.writeHead(404, JSON_HEAD).end('{"error":{"message":"not found"}}');
    return;
  }
  const parts: Buffer[] = [];
  req.on('data', (b: Buffer) => parts.push(b));
  req.on('end', () => {
    let body: { model?: unknown; stream?: unknown };
    try {
      body = JSON.parse(Buffer.concat(parts).toString('utf8')) as typeof body;
    } catch {
      res.writeHead(400, JSON_HEAD).end('{"error":{"message":"bad json"}}');
      return;
    }
    const model = typeof body.model === 'string' ? body.model : 'bench';
    if (api !== 'chat') {
      const fixed = api === 'embeddings' ? embeddingJson : api === 'messages' ? messageJson : responseJson;
      if (body.stream !== true || api === 'embeddings') {
        res.writeHead(200, { ...JSON_HEAD, 'content-length': fixed.length }).end(fixed);
        return;
      }
      const shape = api === 'messages' ? messagesShape : responsesShape;
      res.writeHead(200, SSE_HEAD);
      res.write(shape.first);
      for (let i = 0; i < STREAM_DELTAS; i++) res.write(shape.content);
      res.end(shape.tail);
      return;
    }
    if (body.stream !== true) {
      let out = jsonCache.get(model);
      if (!out) {
        out = completionJson(model);
        jsonCache.set(model, out);
      }
      res.writeHead(200, { ...JSON_HEAD, 'content-length': out.length }).end(out);
      return;
    }
    const m = PACED.exec(model);
    const chunks = m ? Number(m[1]) : 16;
    const shape = shapeOf(model, chunks);
    res.writeHead(200, SSE_HEAD);
    res.write(shape.first);
    if (!m) {
      for (let i = 0; i < chunks; i++) res.write(shape.content);
      res.end(shape.tail);
      return;
    }
    pace(Number(m[2]), { res, left: chunks, shape });
  });
});
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;
// The same accept queue as the proxy's (SERVER_LISTEN_BACKLOG): at Node's default 511 a 2,000-stream
// burst straight at the upstream (and the proxy's provider connections) had handshakes dropped and
// retried 1 s later, which is not the upstream's speed (issue 30).
server.listen({ port: Number(process.env.UPSTREAM_PORT ?? 0), host: '127.0.0.1', backlog: 4096 }, () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
});
