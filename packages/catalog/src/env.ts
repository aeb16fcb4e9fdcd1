/**
 * `${VAR}` and `${VAR:-default}` substitution (the shell's syntax). `${VAR:-default}` uses the
 * default when VAR is unset or empty; `${VAR}` with VAR unset is a problem reported by the caller.
 */
const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export function substituteEnv(
  text: string,
  env: Record<string, string | undefined>,
): { value: string; missing: string[] } {
  const missing: string[] = [];
  const value = text.replace(PLACEHOLDER, (_m, name: string, fallback: string | undefined) => {
    const v = env[name];
    if (v !== undefined && v !== '') return v;
    if (fallback !== undefined) return fallback;
    missing.push(name);
    return '';
  });
  return { value, missing };
}
