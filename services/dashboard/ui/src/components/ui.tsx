import { type ReactNode, useEffect, useState } from 'react';

/** A dialog over the page; Escape closes it. */
export function Modal(props: { title: string; children: ReactNode; onClose: () => void }) {
  const { onClose } = props;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && onClose();
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);
  return (
    <div className="modal-backdrop">
      <div className="modal" role="dialog" aria-modal="true" aria-label={props.title}>
        <h2>{props.title}</h2>
        {props.children}
      </div>
    </div>
  );
}

export function Stat(props: { label: string; value: ReactNode; hint?: ReactNode; testId?: string }) {
  return (
    <div className="stat" data-testid={props.testId}>
      <div className="stat-label">{props.label}</div>
      <div className="stat-value">{props.value}</div>
      {props.hint ? <div className="stat-hint">{props.hint}</div> : null}
    </div>
  );
}

export function ErrorBox(props: { error: unknown }) {
  if (!props.error) return null;
  return (
    <div className="error" role="alert">
      {props.error instanceof Error ? props.error.message : String(props.error)}
    </div>
  );
}

export function CopyButton(props: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      className="secondary"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(props.text);
        } catch {
          // clipboard unavailable (insecure context): the value is selectable on screen
        }
        setCopied(true);
      }}
    >
      {copied ? 'Copied' : (props.label ?? 'Copy')}
    </button>
  );
}

export function Page(props: { title: string; actions?: ReactNode; children: ReactNode }) {
  return (
    <section className="page">
      <header className="page-header">
        <h1>{props.title}</h1>
        <div className="page-actions">{props.actions}</div>
      </header>
      {props.children}
    </section>
  );
}

export const Badge = (props: { kind: string; children: ReactNode }) => (
  <span className={`badge badge-${props.kind}`}>{props.children}</span>
);
