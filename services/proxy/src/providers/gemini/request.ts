import { AppError } from '@tollgate/errors';
import { buildMessagesRequest } from '../anthropic/request';

/**
 * Chat-completion request → Gemini `generateContent` body (pure). The messages are first put in the
 * Anthropic Messages shape (anthropic/request.ts: roles merged, system apart, tool calls as blocks,
 * the same 400s for what cannot be expressed), then each block becomes a Gemini part: text → `text`,
 * a base64 `data:` image → `inlineData`, an image URL → `fileData`, `tool_use` → `functionCall`,
 * `tool_result` → `functionResponse` (named after the call it answers). `system` → `systemInstruction`,
 * tools → one `functionDeclarations` tool, `tool_choice` → `toolConfig.functionCallingConfig`,
 * sampling fields → `generationConfig` (temperature, topP, maxOutputTokens, stopSequences, seed,
 * penalties, JSON output), `reasoning_effort` / `reasoning.max_tokens` → `thinkingConfig.thinkingBudget`.
 */
type Json = Record<string, unknown>;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const bad = (field: string, message: string) =>
  new AppError('bad_request', `${field}: ${message}`, { param: field });

/** `reasoning_effort` → a thinking budget in tokens (Gemini 2.5's documented range). */
const THINKING_BUDGET: Record<string, number> = {
  none: 0,
  minimal: 512,
  low: 1024,
  medium: 8192,
  high: 24576,
};

/** JSON-schema keywords Gemini's OpenAPI-subset `parameters` refuses. */
const UNSUPPORTED_SCHEMA_KEYS = new Set(['$schema', 'additionalProperties', '$id', '$defs', 'strict']);

function schemaForGemini(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(schemaForGemini);
  if (!isObj(schema)) return schema;
  const out: Json = {};
  for (const [k, v] of Object.entries(schema)) {
    if (!UNSUPPORTED_SCHEMA_KEYS.has(k)) out[k] = k === 'enum' || k === 'required' ? v : schemaForGemini(v);
  }
  return out;
}

const MIME_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  heic: 'image/heic',
  heif: 'image/heif',
  pdf: 'application/pdf',
};

/** `fileData` requires a MIME type: the URL's extension names it (JPEG when it does not). */
function mimeTypeOf(url: string): string {
  const ext = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(new URL(url).pathname)?.[1]?.toLowerCase();
  return (ext && MIME_TYPES[ext]) || 'image/jpeg';
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((b: Json) => (typeof b.text === 'string' ? b.text : '')).join('');
}

function part(block: Json, toolNames: Map<string, string>, at: string): Json {
  switch (block.type) {
    case 'text':
      return { text: block.text };
    case 'image': {
      const src = block.source as Json;
      if (src.type === 'base64') return { inlineData: { mimeType: src.media_type, data: src.data } };
      return { fileData: { mimeType: mimeTypeOf(src.url as string), fileUri: src.url } };
    }
    case 'tool_use':
      toolNames.set(block.id as string, block.name as string);
      return { functionCall: { name: block.name, args: block.input } };
    case 'tool_result': {
      const name = toolNames.get(block.tool_use_id as string);
      if (name === undefined)
        throw bad(at, `tool message '${String(block.tool_use_id)}' answers no earlier tool call`);
      return { functionResponse: { name, response: { content: textOf(block.content) } } };
    }
    default:
      throw bad(at, `'${String(block.type)}' content cannot be sent to a Gemini provider`);
  }
}

function contents(messages: Json[]): Json[] {
  const toolNames = new Map<string, string>();
  return messages.map((m, i) => ({
    role: m.role === 'assistant' ? 'model' : 'user',
    parts: (m.content as Json[]).map((b) => part(b, toolNames, `messages[${i}]`)),
  }));
}

function toolConfig(choice: unknown): Json | undefined {
  if (!isObj(choice)) return undefined;
  switch (choice.type) {
    case 'none':
      return { functionCallingConfig: { mode: 'NONE' } };
    case 'any':
      return { functionCallingConfig: { mode: 'ANY' } };
    case 'tool':
      return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.name] } };
    default:
      return { functionCallingConfig: { mode: 'AUTO' } };
  }
}

function thinkingBudget(body: Json): number | undefined {
  const r = body.reasoning;
  if (isObj(r) && typeof r.max_tokens === 'number' && Number.isInteger(r.max_tokens) && r.max_tokens >= 0)
    return r.max_tokens;
  const effort = isObj(r) && typeof r.effort === 'string' ? r.effort : body.reasoning_effort;
  if (effort === undefined || effort === null) return undefined;
  const budget = typeof effort === 'string' ? THINKING_BUDGET[effort] : undefined;
  if (budget === undefined)
    throw bad('reasoning_effort', "must be 'none', 'minimal', 'low', 'medium' or 'high'");
  return budget;
}

function generationConfig(body: Json, messages: Json): Json {
  const g: Json = {};
  if (body.max_tokens != null || body.max_completion_tokens != null) g.maxOutputTokens = messages.max_tokens;
  if (typeof body.temperature === 'number') g.temperature = body.temperature;
  if (typeof body.top_p === 'number') g.topP = body.top_p;
  if (Array.isArray(messages.stop_sequences)) g.stopSequences = messages.stop_sequences;
  if (typeof body.seed === 'number') g.seed = body.seed;
  if (typeof body.presence_penalty === 'number') g.presencePenalty = body.presence_penalty;
  if (typeof body.frequency_penalty === 'number') g.frequencyPenalty = body.frequency_penalty;
  const format = isObj(body.response_format) ? body.response_format.type : undefined;
  if (format === 'json_object' || format === 'json_schema') g.responseMimeType = 'application/json';
  const rf = body.response_format as Json | undefined;
  if (format === 'json_schema' && isObj(rf?.json_schema) && isObj(rf.json_schema.schema))
    g.responseJsonSchema = rf.json_schema.schema;
  const budget = thinkingBudget(body);
  if (budget !== undefined) g.thinkingConfig = { thinkingBudget: budget };
  return g;
}

/** The `generateContent` body for a chat-completion `body` (the model goes in the URL). */
export function buildGenerateContentRequest(body: Json): Json {
  const m = buildMessagesRequest(body, { model: '' });
  const out: Json = { contents: contents(m.messages as Json[]) };
  if (m.system !== undefined) out.systemInstruction = { parts: [{ text: textOf(m.system) }] };
  if (Array.isArray(m.tools) && m.tools.length > 0) {
    out.tools = [
      {
        functionDeclarations: (m.tools as Json[]).map((t) => ({
          name: t.name,
          ...(typeof t.description === 'string' ? { description: t.description } : {}),
          parameters: schemaForGemini(t.input_schema),
        })),
      },
    ];
    const tc = toolConfig(m.tool_choice);
    if (tc) out.toolConfig = tc;
  }
  const g = generationConfig(body, m);
  if (Object.keys(g).length > 0) out.generationConfig = g;
  return out;
}

/** `<base path>/models/<model>:generateContent`, or `:streamGenerateContent?alt=sse` (SSE). */
export function generateContentPath(basePath: string, model: string, stream: boolean): string {
  const m = encodeURIComponent(model);
  return stream
    ? `${basePath}/models/${m}:streamGenerateContent?alt=sse`
    : `${basePath}/models/${m}:generateContent`;
}

/** The key header Gemini's API reads (never the `?key=` query: URLs end up in logs). */
export function geminiHeaders(apiKey: string | undefined): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (apiKey) headers['x-goog-api-key'] = apiKey;
  return headers;
}
