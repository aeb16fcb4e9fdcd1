import type { DashboardAnswer } from '@tollgate/contracts';

type Kept = DashboardAnswer<'generation'>['data']['bodies'];

/** JSON shown indented when it parses (a prompt cut by the size bound does not: shown as kept). */
function readable(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/**
 * Opt-in bodies (issue 28): the prompt (the request's JSON body) and the answer's text, as the proxy
 * kept them — configured patterns already replaced by `[REDACTED]`, cut to BODIES_MAX_BYTES with a
 * marker. Rendered as text (never as HTML). Nothing kept: says how to turn it on.
 */
export function GenerationBodies(props: { bodies: Kept | undefined }) {
  const b = props.bodies;
  if (!b) {
    return (
      <p className="muted" data-testid="generation-bodies-off">
        Prompt and answer not kept (turn on “Keep prompts and answers” on the key to keep them).
      </p>
    );
  }
  return (
    <section className="bodies" data-testid="generation-bodies">
      {b.truncated ? <p className="muted">Cut to the configured size (marked where cut).</p> : null}
      <h3>Prompt</h3>
      <pre data-testid="generation-prompt">{readable(b.prompt)}</pre>
      <h3>Answer</h3>
      <pre data-testid="generation-answer">{b.answer}</pre>
    </section>
  );
}
