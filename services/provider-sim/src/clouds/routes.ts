import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SimDefaults } from '../completion/completion.handler';
import { bedrockConverse } from './bedrock';
import { awsError, azureError } from './cloud-error';
import { bedrockInvoke, geminiEmbeddings, openaiEmbeddings } from './embeddings';
import { checkGeminiKey, geminiGenerate } from './gemini';
import { type AwsCredentials, SIM_AWS_CREDENTIALS, verifySigV4 } from './sigv4';

/**
 * The cloud APIs of the simulator (README, "Cloud modes"): Gemini (`/v1beta/models/<m>:<method>`),
 * Azure OpenAI (`/openai/deployments/<d>/<operation>?api-version=`) and Bedrock
 * (`/model/<id>/<operation>`, SigV4). Each checks its own credentials before reading the request.
 */
export interface CloudOptions {
  /** The key Gemini's `x-goog-api-key` and Azure's `api-key` / bearer must carry (any non-empty one when unset). */
  apiKey: string | undefined;
  /** The credentials Bedrock requests must be signed with (default SIM_AWS_CREDENTIALS). */
  aws?: AwsCredentials;
  defaults: SimDefaults;
  readBody(req: IncomingMessage): Promise<Buffer>;
  /** The OpenAI mode's chat completions and embeddings, for Azure deployments. */
  openai(operation: string, req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> | void;
}

/** Azure OpenAI's data-plane API versions the simulator knows (GA and preview). */
const AZURE_API_VERSION = /^20\d\d-\d\d-\d\d(-preview)?$/;

const GEMINI =
  /^\/(v1beta|v1)\/models\/([^/:]+):(generateContent|streamGenerateContent|embedContent|batchEmbedContents)$/;
const AZURE = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/;
const BEDROCK = /^\/model\/([^/]+)\/(converse|converse-stream|invoke)$/;

const json = (body: Buffer): unknown => {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
};

function checkAzure(req: IncomingMessage, query: URLSearchParams, apiKey: string | undefined): void {
  const key = req.headers['api-key'];
  const bearer = req.headers.authorization;
  const given =
    typeof key === 'string'
      ? key
      : typeof bearer === 'string' && bearer.startsWith('Bearer ')
        ? bearer.slice(7)
        : '';
  if (given.length === 0 || (apiKey !== undefined && given !== apiKey))
    throw azureError(
      401,
      'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
    );
  const version = query.get('api-version');
  if (version === null || !AZURE_API_VERSION.test(version)) throw azureError(404, 'Resource not found');
}

/** Serves a cloud route, or returns null when `path` is none of them. */
export function cloudRoute(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  query: URLSearchParams,
  o: CloudOptions,
): Promise<void> | null {
  if (req.method !== 'POST') return null;
  let m = GEMINI.exec(path);
  if (m) {
    const [, , model, method] = m as unknown as string[];
    checkGeminiKey(req, o.apiKey);
    const id = decodeURIComponent(model as string);
    if (method === 'embedContent' || method === 'batchEmbedContents')
      return o.readBody(req).then((b) => geminiEmbeddings(res, json(b), id, method === 'batchEmbedContents'));
    const stream = method === 'streamGenerateContent';
    return o.readBody(req).then((b) => geminiGenerate(req, res, json(b), id, stream, o.defaults));
  }
  m = AZURE.exec(path);
  if (m) {
    checkAzure(req, query, o.apiKey);
    const operation = m[2] as string;
    const deployment = decodeURIComponent(m[1] as string);
    if (operation === 'embeddings')
      return o.readBody(req).then((b) => openaiEmbeddings(res, json(b), deployment));
    // Azure takes the model from the URL: a body without `model` is the deployment's.
    return o.readBody(req).then((b) => {
      const raw = json(b) as Record<string, unknown> | undefined;
      if (raw && typeof raw === 'object' && raw.model === undefined) raw.model = deployment;
      return o.openai(operation, req, res, Buffer.from(JSON.stringify(raw ?? null)));
    });
  }
  m = BEDROCK.exec(path);
  if (m) {
    const [, model, operation] = m as unknown as string[];
    return o.readBody(req).then(async (b) => {
      await verifySigV4(req, b, o.aws ?? SIM_AWS_CREDENTIALS);
      const id = decodeURIComponent(model as string);
      if (id.length === 0) throw awsError(400, 'model id is required');
      if (operation === 'invoke') return bedrockInvoke(res, json(b), id);
      await bedrockConverse(req, res, json(b), id, operation === 'converse-stream', o.defaults);
    });
  }
  return null;
}
