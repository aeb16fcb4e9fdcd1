import { createHash } from 'node:crypto';
import { isObject, parseSim, type SimOptions } from '../completion/request';
import { OpenAIError } from '../http/openai-error';
import type { ScriptTurn } from '../script/tool-script';
import { textOf } from '../script/tool-script';

/**
 * Validation of `POST /v1/responses` (OpenAI's Responses API) as the simulator serves it: stateless
 * (`previous_response_id`, `conversation` and `store: true` are refused like a provider without stored
 * responses would), `input` as a string or items, function tools (a `namespace` tool's functions are
 * offered under their own names), and `reasoning` items whose `encrypted_content` must be one the
 * simulator produced, byte for byte (a gateway that alters or drops it is caught).
 */

export interface ResponsesRequest {
  model: string;
  stream: boolean;
  turns: ScriptTurn[];
  /** Text of the prompt for the token count and the seed. */
  promptText: string;
  tools: string[];
  /** A reasoning item is produced (the request has `reasoning`, or `sim.reasoning_tokens`). */
  reasoning: boolean;
  encryptedReasoning: boolean;
  maxOutputTokens?: number;
  /** Reasoning items that came back with a valid `encrypted_content`. */
  reasoningInputs: number;
  sim: SimOptions;
}

const bad = (param: string, message: string) =>
  new OpenAIError(400, message, 'invalid_request_error', param, null);

/** The simulator's encrypted reasoning: `sim1.<base64url text>.<sha256 prefix>` (tamper-evident). */
export function encryptReasoning(text: string): string {
  const body = Buffer.from(text, 'utf8').toString('base64url');
  return `sim1.${body}.${createHash('sha256').update(`sim:${body}`).digest('hex').slice(0, 16)}`;
}

function validEncryptedReasoning(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  const [tag, body, mac] = v.split('.');
  return (
    tag === 'sim1' &&
    body !== undefined &&
    mac === createHash('sha256').update(`sim:${body}`).digest('hex').slice(0, 16)
  );
}

function toolNames(raw: unknown): string[] {
  if (!Array.isArray(raw)) return [];
  const names: string[] = [];
  for (const t of raw) {
    if (!isObject(t)) continue;
    if (t.type === 'function' && typeof t.name === 'string') names.push(t.name);
    if (t.type === 'namespace' && Array.isArray(t.tools)) names.push(...toolNames(t.tools));
  }
  return names;
}

function turnsOf(input: unknown): { turns: ScriptTurn[]; reasoningInputs: number } {
  if (typeof input === 'string') return { turns: [{ role: 'user', text: input }], reasoningInputs: 0 };
  if (!Array.isArray(input))
    throw bad('input', "Invalid type for 'input': expected a string or an array of input items.");
  const turns: ScriptTurn[] = [];
  let reasoningInputs = 0;
  input.forEach((item: unknown, i) => {
    if (!isObject(item)) throw bad(`input[${i}]`, `Invalid type for 'input[${i}]': expected an object.`);
    const type = item.type ?? 'message';
    if (type === 'message') {
      const role = item.role === 'assistant' ? 'assistant' : item.role === 'user' ? 'user' : null;
      if (role !== null) turns.push({ role, text: textOf(item.content) });
    } else if (type === 'function_call')
      turns.push({ role: 'assistant', text: String(item.arguments ?? '') });
    else if (type === 'function_call_output') turns.push({ role: 'tool', text: textOf(item.output) });
    else if (type === 'reasoning') {
      if (item.encrypted_content !== undefined && item.encrypted_content !== null) {
        if (!validEncryptedReasoning(item.encrypted_content)) {
          throw bad(`input[${i}].encrypted_content`, 'The encrypted content for item could not be verified.');
        }
        reasoningInputs++;
      }
    } else if (type === 'item_reference') {
      throw bad(
        `input[${i}]`,
        `Item with id '${String(item.id)}' not found. Items are not persisted when store is false.`,
      );
    }
  });
  return { turns, reasoningInputs };
}

export function parseResponsesRequest(body: unknown): ResponsesRequest {
  if (!isObject(body)) throw bad('body', 'We could not parse the JSON body of your request.');
  if (typeof body.model !== 'string' || body.model.length === 0)
    throw bad('model', 'you must provide a model parameter');
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    throw bad(
      'previous_response_id',
      `Previous response with id '${String(body.previous_response_id)}' not found.`,
    );
  }
  if (body.store === true) throw bad('store', 'The simulator does not store responses: send store: false.');
  if (body.input === undefined) throw bad('input', "Missing required parameter: 'input'.");
  const { turns, reasoningInputs } = turnsOf(body.input);
  const system = typeof body.instructions === 'string' ? body.instructions : '';
  const include = Array.isArray(body.include) ? body.include : [];
  const sim = parseSim(body.sim);
  const max = body.max_output_tokens;
  return {
    model: body.model,
    stream: body.stream === true,
    turns,
    promptText: system + turns.map((t) => `${t.role}: ${t.text}`).join('\n'),
    tools: body.tool_choice === 'none' ? [] : toolNames(body.tools),
    reasoning: isObject(body.reasoning) || sim.reasoningTokens > 0,
    encryptedReasoning: include.includes('reasoning.encrypted_content'),
    maxOutputTokens: typeof max === 'number' && Number.isInteger(max) && max > 0 ? max : undefined,
    reasoningInputs,
    sim,
  };
}
