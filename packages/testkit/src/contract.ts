import { isDeepStrictEqual } from 'node:util';

/** What `expectContract` needs of a zod schema (testkit does not depend on zod). */
interface Schema {
  safeParse(
    value: unknown,
  ): { success: true; data: unknown } | { success: false; error: { issues: unknown[] } };
}

/** Paths present in `raw` but dropped by the parse (fields the contract does not declare). */
function dropped(raw: unknown, parsed: unknown, path = ''): string[] {
  if (Array.isArray(raw) && Array.isArray(parsed)) {
    return raw.flatMap((v, i) => dropped(v, parsed[i], `${path}[${i}]`));
  }
  if (raw && parsed && typeof raw === 'object' && typeof parsed === 'object') {
    return Object.entries(raw).flatMap(([k, v]) =>
      k in parsed
        ? dropped(v, (parsed as Record<string, unknown>)[k], path ? `${path}.${k}` : k)
        : [path ? `${path}.${k}` : k],
    );
  }
  return [];
}

/**
 * The owner's side of an internal contract: a real answer `body` parses with the contract's response
 * schema and declares every field it carries (a field the contract lacks would be silently dropped by
 * the caller's parse). Throws with the issues or the undeclared paths.
 */
export function expectContract(schema: Schema, body: unknown): void {
  const result = schema.safeParse(body);
  if (!result.success) {
    throw new Error(`answer does not match the contract: ${JSON.stringify(result.error.issues.slice(0, 5))}`);
  }
  const extra = dropped(body, result.data);
  if (extra.length > 0)
    throw new Error(`answer carries fields the contract does not declare: ${extra.join(', ')}`);
  if (!isDeepStrictEqual(JSON.parse(JSON.stringify(result.data)), body)) {
    throw new Error('the contract transforms the answer (a response schema must describe it as sent)');
  }
}
