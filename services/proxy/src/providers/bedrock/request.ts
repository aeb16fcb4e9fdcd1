import { AppError } from '@tollgate/errors';
import { buildMessagesRequest } from '../anthropic/request';

/**
 * Chat-completion request → Bedrock Converse body (pure). Like the Gemini adapter, the messages are
 * first put in the Anthropic Messages shape (anthropic/request.ts: roles merged, system apart, the same
 * 400s), then each block becomes a Converse content block: text → `text`, a base64 `data:` image →
 * `image {format, source.bytes}` (png, jpeg, gif, webp; an image URL is a 400: Converse takes bytes),
 * `tool_use` → `toolUse`, `tool_result` → `toolResult`. `system` → `system: [{text}]`, sampling →
 * `inferenceConfig` (maxTokens, temperature, topP, stopSequences), tools → `toolConfig` (`toolSpec`
 * with `inputSchema.json`; `tool_choice` auto/required/a function → auto/any/tool; `none` sends the
 * tools without a choice, as Converse has no "none"), `reasoning.max_tokens` / `reasoning_effort` →
 * `additionalModelRequestFields.thinking` (Claude on Bedrock).
 */
type Json = Record<string, unknown>;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const bad = (field: string, message: string) =>
  new AppError('bad_request', `${field}: ${message}`, { param: field });

const IMAGE_FORMATS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

const THINKING_BUDGET: Record<string, number> = { minimal: 1024, low: 1024, medium: 8192, high: 24576 };

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((b: Json) => (typeof b.text === 'string' ? b.text : '')).join('');
}

function block(b: Json, at: string): Json {
  switch (b.type) {
    case 'text':
      return { text: b.text };
    case 'image': {
      const src = b.source as Json;
      const format = IMAGE_FORMATS[String(src.media_type).toLowerCase()];
      if (src.type !== 'base64' || format === undefined)
        throw bad(at, 'a Bedrock provider takes images as base64 data: URIs of png, jpeg, gif or webp');
      return { image: { format, source: { bytes: src.data } } };
    }
    case 'tool_use':
      return { toolUse: { toolUseId: b.id, name: b.name, input: b.input } };
    case 'tool_result':
      return { toolResult: { toolUseId: b.tool_use_id, content: [{ text: textOf(b.content) }] } };
    default:
      throw bad(at, `'${String(b.type)}' content cannot be sent to a Bedrock provider`);
  }
}

function toolChoice(choice: unknown): Json | undefined {
  if (!isObj(choice)) return undefined;
  if (choice.type === 'any') return { any: {} };
  if (choice.type === 'tool') return { tool: { name: choice.name } };
  if (choice.type === 'auto') return { auto: {} };
  return undefined;
}

function thinking(body: Json): Json | undefined {
  const r = body.reasoning;
  let budget: number | undefined;
  if (isObj(r) && typeof r.max_tokens === 'number' && Number.isInteger(r.max_tokens)) budget = r.max_tokens;
  else {
    const effort = isObj(r) && typeof r.effort === 'string' ? r.effort : body.reasoning_effort;
    if (typeof effort === 'string') budget = THINKING_BUDGET[effort];
  }
  return budget !== undefined && budget > 0
    ? { thinking: { type: 'enabled', budget_tokens: budget } }
    : undefined;
}

/** The Converse body for a chat-completion `body` (the model goes in the URL). */
export function buildConverseRequest(body: Json): Json {
  const m = buildMessagesRequest(body, { model: '' });
  const out: Json = {
    messages: (m.messages as Json[]).map((msg, i) => ({
      role: msg.role,
      content: (msg.content as Json[]).map((b) => block(b, `messages[${i}]`)),
    })),
  };
  if (m.system !== undefined) out.system = [{ text: textOf(m.system) }];
  const inference: Json = {};
  if (body.max_tokens != null || body.max_completion_tokens != null) inference.maxTokens = m.max_tokens;
  if (typeof body.temperature === 'number') inference.temperature = m.temperature;
  if (typeof body.top_p === 'number') inference.topP = body.top_p;
  if (Array.isArray(m.stop_sequences)) inference.stopSequences = m.stop_sequences;
  if (Object.keys(inference).length > 0) out.inferenceConfig = inference;
  if (Array.isArray(m.tools) && m.tools.length > 0) {
    const tools = (m.tools as Json[]).map((t) => ({
      toolSpec: {
        name: t.name,
        ...(typeof t.description === 'string' ? { description: t.description } : {}),
        inputSchema: { json: t.input_schema },
      },
    }));
    const choice = toolChoice(m.tool_choice);
    out.toolConfig = choice ? { tools, toolChoice: choice } : { tools };
  }
  const extra = thinking(body);
  if (extra) out.additionalModelRequestFields = extra;
  return out;
}

/** `<base path>/model/<model id>/converse` or `/converse-stream` (ids and ARNs percent-encoded). */
export const conversePath = (basePath: string, model: string, stream: boolean): string =>
  `${basePath}/model/${encodeURIComponent(model)}/${stream ? 'converse-stream' : 'converse'}`;
