import { parse } from 'yaml';

/** Compiles the YAML source to the JSON document: anchors and merge keys expanded, 2-space JSON. */
export function compileOpenapi(yamlText: string): string {
  const doc: unknown = parse(yamlText, { merge: true, maxAliasCount: -1 });
  return `${JSON.stringify(doc, null, 2)}\n`;
}
