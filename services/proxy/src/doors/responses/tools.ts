import { badRequest } from '@tollgate/errors';

/**
 * The `tools` and `tool_choice` of a Responses request in the canonical (chat-completions) shape.
 *
 * - `function` tools become chat function tools.
 * - A `namespace` tool (Codex groups functions under one, e.g. `multi_agent_v1`) is flattened: each of
 *   its functions becomes a chat function named `<namespace>__<name>` (chat has no namespaces), and a
 *   call of that name is answered as a `function_call` with `name` and `namespace` apart again
 *   (`ToolNames.call`).
 * - Hosted tools (`web_search`, `file_search`, `code_interpreter`, …: the provider runs them) and
 *   `custom` (free-form) tools cannot be served by a chat-completions or Anthropic provider. Merely
 *   offered, they are withheld from the provider and named in `withheld` (the `x-tollgate-withheld-tools`
 *   header and the generation record); a `tool_choice` that names one is a 400.
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Separator of a namespace and a function name in a flattened chat function name. */
const NAMESPACE_SEPARATOR = '__';
/** Chat function names: OpenAI's rule, which every provider accepts. */
const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** A function the model may call: its name in the Responses API and its namespace, if any. */
interface ToolName {
  name: string;
  namespace: string | null;
}

/** Flattened chat function names → the Responses name and namespace (only namespaced ones are listed). */
export class ToolNames {
  readonly #namespaced = new Map<string, ToolName>();

  add(flat: string, name: ToolName): void {
    this.#namespaced.set(flat, name);
  }

  /** The Responses `name` (and `namespace`) of a chat function call's name. */
  call(flat: string): ToolName {
    return this.#namespaced.get(flat) ?? { name: flat, namespace: null };
  }

  /** The chat function name of a Responses `function_call` item's name and namespace. */
  static flat(name: string, namespace: string | null | undefined): string {
    return typeof namespace === 'string' && namespace.length > 0
      ? `${namespace}${NAMESPACE_SEPARATOR}${name}`
      : name;
  }
}

export interface TranslatedTools {
  /** Chat `tools`, or null when none is left for the provider. */
  tools: Json[] | null;
  /** Types of the hosted and custom tools withheld from the provider, in order, once each. */
  withheld: string[];
  names: ToolNames;
}

function functionTool(t: Json, at: string, namespace: string | null, names: ToolNames): Json {
  if (typeof t.name !== 'string' || t.name.length === 0) throw badRequest(`${at}.name: expected a string`);
  const flat = ToolNames.flat(t.name, namespace);
  if (!FUNCTION_NAME.test(flat)) {
    throw badRequest(
      `${at}.name: '${flat}' must be 1 to 64 letters, digits, '_' or '-' (namespaced functions are named <namespace>__<name>)`,
      { field: `${at}.name` },
    );
  }
  if (namespace !== null) names.add(flat, { name: t.name, namespace });
  if (t.parameters !== undefined && t.parameters !== null && !isObject(t.parameters)) {
    throw badRequest(`${at}.parameters: expected a JSON schema object`);
  }
  const fn: Json = { name: flat };
  if (typeof t.description === 'string') fn.description = t.description;
  fn.parameters = isObject(t.parameters) ? t.parameters : { type: 'object', properties: {} };
  if (typeof t.strict === 'boolean') fn.strict = t.strict;
  return { type: 'function', function: fn };
}

/** The tools of a Responses request (`tools`, validated) for a chat-completions provider. */
export function translateTools(raw: unknown): TranslatedTools {
  const names = new ToolNames();
  const withheld: string[] = [];
  if (raw === undefined || raw === null) return { tools: null, withheld, names };
  if (!Array.isArray(raw)) throw badRequest('tools: expected an array');
  const tools: Json[] = [];
  for (let i = 0; i < raw.length; i++) {
    const t: unknown = raw[i];
    const at = `tools.${i}`;
    if (!isObject(t) || typeof t.type !== 'string')
      throw badRequest(`${at}: expected a tool object with a type`);
    if (t.type === 'function') tools.push(functionTool(t, at, null, names));
    else if (t.type === 'namespace') {
      if (typeof t.name !== 'string' || t.name.length === 0)
        throw badRequest(`${at}.name: expected a string`);
      if (!Array.isArray(t.tools)) throw badRequest(`${at}.tools: expected an array`);
      for (let j = 0; j < t.tools.length; j++) {
        const inner: unknown = t.tools[j];
        const innerAt = `${at}.tools.${j}`;
        if (!isObject(inner)) throw badRequest(`${innerAt}: expected a tool object`);
        if (inner.type === 'function') tools.push(functionTool(inner, innerAt, t.name, names));
        else if (!withheld.includes(`${String(inner.type)}`)) withheld.push(String(inner.type));
      }
    } else if (!withheld.includes(t.type)) withheld.push(t.type);
  }
  return { tools: tools.length > 0 ? tools : null, withheld, names };
}

const CHOICE_MODES = new Set(['auto', 'none', 'required']);

/**
 * `tool_choice` in the chat shape (undefined: not given). A choice of a hosted tool, a custom tool or
 * an `mcp` server is a 400: the request depends on a tool the provider is not given.
 */
export function translateToolChoice(raw: unknown, tools: TranslatedTools): unknown {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === 'string') {
    if (!CHOICE_MODES.has(raw))
      throw badRequest(`tool_choice: expected 'auto', 'none', 'required' or an object`);
    return raw;
  }
  if (!isObject(raw) || typeof raw.type !== 'string')
    throw badRequest('tool_choice: expected a string or an object');
  if (raw.type === 'function') {
    if (typeof raw.name !== 'string') throw badRequest('tool_choice.name: expected a string');
    const flat = ToolNames.flat(raw.name, raw.namespace as string | undefined);
    const offered = (tools.tools ?? []).some((t) => (t.function as Json).name === flat);
    if (!offered)
      throw badRequest(`tool_choice.name: '${raw.name}' is not a function of tools`, {
        field: 'tool_choice',
      });
    return { type: 'function', function: { name: flat } };
  }
  if (raw.type === 'allowed_tools') {
    // The model is given only the allowed functions (chat's `allowed_tools` is not spoken by every format).
    if (raw.mode !== 'auto' && raw.mode !== 'required')
      throw badRequest(`tool_choice.mode: expected 'auto' or 'required'`);
    if (!Array.isArray(raw.tools)) throw badRequest('tool_choice.tools: expected an array');
    const allowed = new Set<string>();
    raw.tools.forEach((t: unknown, i) => {
      if (!isObject(t) || t.type !== 'function' || typeof t.name !== 'string') {
        throw badRequest(
          `tool_choice.tools.${i}: only function tools can be allowed (hosted tools are not served by this gateway)`,
          { field: 'tool_choice' },
        );
      }
      allowed.add(ToolNames.flat(t.name, t.namespace as string | undefined));
    });
    const kept = (tools.tools ?? []).filter((t) => allowed.has((t.function as Json).name as string));
    tools.tools = kept.length > 0 ? kept : null;
    return kept.length > 0 ? raw.mode : 'none';
  }
  throw badRequest(
    `tool_choice: the hosted tool '${raw.type}' is not served by this gateway (only function tools can be chosen)`,
    { field: 'tool_choice' },
  );
}
