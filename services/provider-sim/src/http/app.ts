import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AnthropicError, anthropicId } from '../anthropic/anthropic-error';
import { messagesJson, messagesStream } from '../anthropic/messages.handler';
import { parseMessagesRequest } from '../anthropic/messages.request';
import { CloudError } from '../clouds/cloud-error';
import { openaiEmbeddings } from '../clouds/embeddings';
import { cloudRoute } from '../clouds/routes';
import type { AwsCredentials } from '../clouds/sigv4';
import { completeJson, completeStream, type SimDefaults } from '../completion/completion.handler';
import { ledgerJson } from '../completion/ledger';
import { parseCompletionRequest } from '../completion/request';
import { responsesAnswer } from '../responses/responses.handler';
import { parseResponsesRequest } from '../responses/responses.request';
import { chatScript, scriptedChatJson, scriptedChatStream } from '../script/chat-script';
import { OpenAIError } from './openai-error';

/**
 * The simulator's HTTP layer. Plain node:http instead of express: the simulator is the baseline of
 * the proxy benchmark, so the hot route avoids any framework work (see README, "Performance").
 */
export interface ProviderSimOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default time to first token (ms), 0 by default. */
  ttftMs?: number;
  /** Default delay between tokens (ms), 0 by default. */
  interTokenMs?: number;
  /** When set, /v1 requests must carry `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Ids listed by GET /v1/models. Completions accept any model id. */
  models?: readonly string[];
  /**
   * Refuse unknown chat-completion arguments the way OpenAI does (400 "Unrecognized request argument
   * supplied: …"); `sim` is still accepted. Default false (unknown fields ignored).
   */
  strict?: boolean;
  /** The credentials Bedrock requests must be signed with (default SIM_AWS_CREDENTIALS, clouds/sigv4.ts). */
  aws?: AwsCredentials;
}

export interface ProviderSim {
  /** Origin, e.g. http://127.0.0.1:41234 (OpenAI base URL = `${url}/v1`). */
  url: string;
  /** `${url}/v1`, ready for an OpenAI client or a catalog base_url. */
  baseUrl: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

export const DEFAULT_MODELS: readonly string[] = [
  'gpt-4o-mini',
  'gpt-4o',
  'claude-sonnet-4',
  'llama-3.1-8b-instruct',
  'deepseek-chat',
];

const MAX_BODY_BYTES = 16 * 1024 * 1024;
const MODELS_CREATED = 1_700_000_000;

function sendJson(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const sendError = (res: ServerResponse, err: OpenAIError) =>
  sendJson(res, err.status, JSON.stringify(err.toJSON()));

/** An Anthropic-shaped error answer (the /v1/messages route). */
function sendAnthropicError(res: ServerResponse, err: AnthropicError): void {
  const body = JSON.stringify(err.toJSON(anthropicId('req_')));
  res.writeHead(err.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'request-id': anthropicId('req_'),
  });
  res.end(body);
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(new OpenAIError(413, 'Request body too large.', 'invalid_request_error'));
        req.resume();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function modelObject(id: string) {
  return { id, object: 'model', created: MODELS_CREATED, owned_by: 'tollgate-sim' };
}

export function createProviderSimHandler(options: ProviderSimOptions = {}) {
  const defaults: SimDefaults = { ttftMs: options.ttftMs ?? 0, interTokenMs: options.interTokenMs ?? 0 };
  const expectedAuth = options.apiKey ? `Bearer ${options.apiKey}` : undefined;
  const models = options.models ?? DEFAULT_MODELS;
  const modelsJson = JSON.stringify({ object: 'list', data: models.map(modelObject) });

  async function readJson(req: IncomingMessage): Promise<unknown> {
    const raw = await readBody(req);
    try {
      return JSON.parse(raw.toString('utf8'));
    } catch {
      return undefined;
    }
  }

  async function chatCompletions(req: IncomingMessage, res: ServerResponse): Promise<void> {
    await chatCompletionsOf(await readJson(req), req, res);
  }

  async function chatCompletionsOf(raw: unknown, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const parsed = parseCompletionRequest(raw, options.strict === true);
    const script = chatScript(parsed);
    if (script !== null) {
      if (parsed.stream) scriptedChatStream(res, parsed, script);
      else scriptedChatJson(res, parsed, script);
      return;
    }
    if (parsed.stream) await completeStream(req, res, parsed, defaults);
    else await completeJson(req, res, parsed, defaults);
  }

  /** OpenAI's Responses API (responses/): native for catalog providers that declare `responses: true`. */
  async function responses(req: IncomingMessage, res: ServerResponse): Promise<void> {
    await responsesAnswer(req, res, parseResponsesRequest(await readJson(req)), defaults);
  }

  /**
   * Anthropic mode: the key (when apiKey is set) as `x-api-key` or `Authorization: Bearer` (the
   * official SDK sends the latter), and `anthropic-version`, are required, as by the API.
   */
  async function messages(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { authorization } = req.headers;
    const key = req.headers['x-api-key'];
    if (expectedAuth !== undefined && key !== options.apiKey && authorization !== expectedAuth) {
      throw new AnthropicError(
        401,
        key || authorization ? 'invalid x-api-key' : 'x-api-key header is required',
      );
    }
    if (!req.headers['anthropic-version'])
      throw new AnthropicError(400, 'anthropic-version: header is required');
    let body: unknown;
    try {
      body = await readJson(req);
    } catch (err) {
      if (err instanceof OpenAIError) throw new AnthropicError(err.status, err.message);
      throw err;
    }
    const parsed = parseMessagesRequest(body, { betas: req.headers['anthropic-beta'] !== undefined });
    if (parsed.stream) await messagesStream(req, res, parsed, defaults);
    else await messagesJson(req, res, parsed, defaults);
  }

  function route(req: IncomingMessage, res: ServerResponse): Promise<void> | void {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (path === '/healthz' || path === '/readyz') return sendJson(res, 200, '{"status":"ok"}');
    // What the simulator charged, per request (completion/ledger.ts): `?tag=` filters by `sim.tag`.
    if (path === '/sim/ledger' && req.method === 'GET') {
      const tag = q === -1 ? null : new URLSearchParams(url.slice(q + 1)).get('tag');
      return sendJson(res, 200, ledgerJson(tag));
    }
    const route = path.startsWith('/v1/') ? path.slice(3) : path;
    if (route === '/messages' && req.method === 'POST') return messages(req, res);
    const cloud = cloudRoute(req, res, path, new URLSearchParams(q === -1 ? '' : url.slice(q + 1)), {
      apiKey: options.apiKey,
      aws: options.aws,
      defaults,
      readBody,
      openai: (operation, r, s, body) => {
        let raw: unknown;
        try {
          raw = JSON.parse(body.toString('utf8'));
        } catch {}
        if (operation === 'chat/completions') return chatCompletionsOf(raw, r, s);
        throw new OpenAIError(404, `Invalid URL (POST ${path})`, 'invalid_request_error');
      },
    });
    if (cloud !== null) return cloud;
    if (expectedAuth !== undefined && req.headers.authorization !== expectedAuth) {
      const provided = req.headers.authorization;
      throw new OpenAIError(
        401,
        provided
          ? 'Incorrect API key provided. You can find your API key at the provider simulator configuration (SIM_API_KEY).'
          : "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        'invalid_request_error',
        null,
        provided ? 'invalid_api_key' : null,
      );
    }
    if (route === '/chat/completions' && req.method === 'POST') return chatCompletions(req, res);
    if (route === '/embeddings' && req.method === 'POST')
      return readJson(req).then((raw) => openaiEmbeddings(res, raw));
    if (route === '/responses' && req.method === 'POST') return responses(req, res);
    if (route === '/models' && req.method === 'GET') return sendJson(res, 200, modelsJson);
    if (route.startsWith('/models/') && req.method === 'GET') {
      return sendJson(res, 200, JSON.stringify(modelObject(decodeURIComponent(route.slice(8)))));
    }
    throw new OpenAIError(404, `Invalid URL (${req.method} ${path})`, 'invalid_request_error');
  }

  const fail = (res: ServerResponse, err: unknown) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (err instanceof OpenAIError) {
      sendError(res, err);
      return;
    }
    if (err instanceof AnthropicError) {
      sendAnthropicError(res, err);
      return;
    }
    if (err instanceof CloudError) {
      err.send(res);
      return;
    }
    sendError(
      res,
      new OpenAIError(500, 'The server had an error while processing your request.', 'server_error'),
    );
  };

  return (req: IncomingMessage, res: ServerResponse): void => {
    try {
      const p = route(req, res);
      if (p instanceof Promise) p.catch((err: unknown) => fail(res, err));
    } catch (err) {
      fail(res, err);
    }
  };
}

/** Starts the simulator in-process (tests, benchmarks). Resolves once it listens. */
export function startProviderSim(options: ProviderSimOptions = {}): Promise<ProviderSim> {
  const server = createServer({ keepAliveTimeout: 65_000 }, createProviderSimHandler(options));
  const host = options.host ?? '127.0.0.1';
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      const port = (server.address() as AddressInfo).port;
      const urlHost =
        host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
      const url = `http://${urlHost}:${port}`;
      resolve({
        url,
        baseUrl: `${url}/v1`,
        port,
        server,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
