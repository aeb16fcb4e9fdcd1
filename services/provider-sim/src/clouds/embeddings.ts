import type { ServerResponse } from 'node:http';
import { countText } from '../completion/prompt-tokens';
import { isObject, parseSim, type SimOptions } from '../completion/request';
import { OpenAIError } from '../http/openai-error';
import { awsError, type CloudError, googleError } from './cloud-error';

/**
 * Embeddings in every mode: OpenAI's `POST /v1/embeddings` (and Azure's deployment route), Gemini's
 * `:embedContent` / `:batchEmbedContents`, Bedrock InvokeModel for Titan (`inputText`) and Cohere
 * (`texts`). Vectors are deterministic (seeded by the text) and unit length; token counts are the
 * simulator's o200k counts (a token array counts its length). `sim.error_status` answers that error in
 * the mode's envelope. Each mode checks its API's own rules (OpenAI: input shape, at most 2048 inputs;
 * Gemini: each request's `model` is the URL's; Bedrock: the body of the model's family).
 */
type Json = Record<string, unknown>;

const MAX_INPUTS = 2048;

/** A unit vector of `dims` numbers seeded by `text` (mulberry32 over an FNV-1a hash). */
function vectorOf(text: string, dims: number): number[] {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  let a = h >>> 0;
  const v = new Array<number>(dims);
  let norm = 0;
  for (let i = 0; i < dims; i++) {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const x = ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
    v[i] = x;
    norm += x * x;
  }
  const s = 1 / Math.sqrt(norm || 1);
  for (let i = 0; i < dims; i++) v[i] = Math.fround((v[i] as number) * s);
  return v;
}

function send(res: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const simOf = (raw: Json): SimOptions => parseSim(raw.sim);

function fault(sim: SimOptions, error: (status: number, message: string) => Error | CloudError): void {
  if (sim.errorStatus !== undefined) throw error(sim.errorStatus, sim.errorMessage ?? 'Simulated error.');
}

/** OpenAI `POST /v1/embeddings` (Azure: the deployment's `/embeddings`). */
export function openaiEmbeddings(res: ServerResponse, raw: unknown, deployment?: string): void {
  if (!isObject(raw)) throw new OpenAIError(400, 'We could not parse the JSON body of your request.');
  const model = deployment ?? raw.model;
  if (typeof model !== 'string' || model.length === 0)
    throw new OpenAIError(400, 'you must provide a model parameter');
  const input = raw.input;
  const list: unknown[] =
    typeof input === 'string' || (Array.isArray(input) && typeof input[0] === 'number')
      ? [input]
      : Array.isArray(input)
        ? input
        : [];
  if (
    list.length === 0 ||
    list.some((i) => !(typeof i === 'string' ? i.length > 0 : Array.isArray(i) && i.length > 0))
  )
    throw new OpenAIError(
      400,
      "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.",
      'invalid_request_error',
      'input',
    );
  if (list.length > MAX_INPUTS)
    throw new OpenAIError(
      400,
      `'$.input' is invalid: at most ${MAX_INPUTS} inputs.`,
      'invalid_request_error',
      'input',
    );
  const encoding = raw.encoding_format ?? 'float';
  if (encoding !== 'float' && encoding !== 'base64')
    throw new OpenAIError(
      400,
      "Invalid value for 'encoding_format'.",
      'invalid_request_error',
      'encoding_format',
    );
  const sim = simOf(raw);
  fault(sim, (s, m) => new OpenAIError(s, m, s >= 500 ? 'server_error' : 'invalid_request_error'));
  const dims = typeof raw.dimensions === 'number' ? raw.dimensions : 1536;
  let tokens = 0;
  const data = list.map((item, index) => {
    const text = typeof item === 'string' ? item : (item as number[]).join(' ');
    tokens += typeof item === 'string' ? countText(item) : (item as number[]).length;
    const v = vectorOf(text, dims);
    const embedding = encoding === 'float' ? v : Buffer.from(new Float32Array(v).buffer).toString('base64');
    return { object: 'embedding', index, embedding };
  });
  const reported = sim.promptTokens ?? tokens;
  send(res, { object: 'list', data, model, usage: { prompt_tokens: reported, total_tokens: reported } });
}

function geminiText(content: unknown, at: string): string {
  const parts = isObject(content) && Array.isArray(content.parts) ? content.parts : [];
  const text = parts.map((p: Json) => (typeof p.text === 'string' ? p.text : '')).join('');
  if (text.length === 0) throw googleError(400, `* ${at}.content: must have a text part`);
  return text;
}

/** Gemini `:embedContent` (one) and `:batchEmbedContents` (`requests`, each naming the URL's model). */
export function geminiEmbeddings(res: ServerResponse, raw: unknown, model: string, batch: boolean): void {
  if (!isObject(raw)) throw googleError(400, 'Invalid JSON payload received.');
  fault(simOf(raw), googleError);
  const one = (r: Json, at: string) => {
    const dims = typeof r.outputDimensionality === 'number' ? r.outputDimensionality : 768;
    return { values: vectorOf(geminiText(r.content, at), dims) };
  };
  if (!batch) {
    send(res, { embedding: one(raw, 'EmbedContentRequest') });
    return;
  }
  if (!Array.isArray(raw.requests) || raw.requests.length === 0)
    throw googleError(400, '* BatchEmbedContentsRequest.requests: requests is not specified');
  const embeddings = raw.requests.map((r: unknown, i) => {
    if (!isObject(r) || r.model !== `models/${model}`)
      throw googleError(
        400,
        `* BatchEmbedContentsRequest.requests[${i}].model: the model must be models/${model}, the model of the URL`,
      );
    return one(r, `BatchEmbedContentsRequest.requests[${i}]`);
  });
  send(res, { embeddings });
}

/** Bedrock InvokeModel for an embedding model: Titan (`inputText`) or Cohere (`texts`). */
export function bedrockInvoke(res: ServerResponse, raw: unknown, model: string): void {
  if (!isObject(raw))
    throw awsError(400, 'Malformed input request, please reformat your input and try again.');
  fault(simOf(raw), (s, m) => awsError(s, m));
  if (model.startsWith('amazon.titan-embed')) {
    if (typeof raw.inputText !== 'string' || raw.inputText.length === 0)
      throw awsError(400, 'Malformed input request: #: required key [inputText] not found');
    const dims = typeof raw.dimensions === 'number' ? raw.dimensions : 1024;
    send(res, {
      embedding: vectorOf(raw.inputText, dims),
      inputTextTokenCount: countText(raw.inputText),
    });
    return;
  }
  if (model.startsWith('cohere.embed')) {
    if (!Array.isArray(raw.texts) || raw.texts.length === 0 || typeof raw.input_type !== 'string')
      throw awsError(400, 'Malformed input request: #: required keys [texts, input_type] not found');
    const texts = raw.texts.map(String);
    send(res, {
      id: 'sim',
      response_type: 'embeddings_floats',
      texts,
      embeddings: texts.map((t) => vectorOf(t, 1024)),
    });
    return;
  }
  throw awsError(
    400,
    `The provided model identifier is invalid: ${model} is not an embedding model of the simulator.`,
  );
}
