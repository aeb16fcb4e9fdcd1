import { type ReactNode, useEffect, useId, useRef, useState } from 'react';
import { ApiError } from '../api';

const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

/**
 * A dialog over the page. Focus moves into it on open, Tab and Shift+Tab stay inside, and focus
 * returns to where it was on close. Escape closes it unless `dismissable` is false (a dialog that
 * shows something only once, like a new key, closes only by its own button).
 */
export function Modal(props: {
  title: string;
  children: ReactNode;
  onClose: () => void;
  dismissable?: boolean;
}) {
  const { onClose, dismissable = true } = props;
  const ref = useRef<HTMLDivElement>(null);
  const titleId = useId();
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    const box = ref.current;
    const first =
      box?.querySelector<HTMLElement>('[data-autofocus]') ?? box?.querySelector<HTMLElement>(FOCUSABLE);
    (first ?? box)?.focus();
    return () => before?.focus?.();
  }, []);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        if (dismissable) onClose();
        return;
      }
      if (e.key !== 'Tab' || !ref.current) return;
      const items = [...ref.current.querySelectorAll<HTMLElement>(FOCUSABLE)];
      if (items.length === 0) {
        e.preventDefault();
        return;
      }
      const first = items[0]!;
      const last = items[items.length - 1]!;
      const inside = ref.current.contains(document.activeElement);
      if (e.shiftKey && (document.activeElement === first || !inside)) {
        e.preventDefault();
        last.focus();
      } else if (!e.shiftKey && (document.activeElement === last || !inside)) {
        e.preventDefault();
        first.focus();
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [onClose, dismissable]);
  return (
    <div className="modal-backdrop">
      <div
        className="modal"
        role="dialog"
        aria-modal="true"
        aria-labelledby={titleId}
        ref={ref}
        tabIndex={-1}
      >
        <h2 id={titleId}>{props.title}</h2>
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

/** What went wrong, in words: the server's message, or what an HTTP status means. */
function describeError(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof TypeError) return 'The dashboard server could not be reached (network error).';
  return error instanceof Error ? error.message : String(error);
}

export function ErrorBox(props: { error: unknown; onRetry?: () => void }) {
  if (!props.error) return null;
  return (
    <div className="error" role="alert">
      <span>{describeError(props.error)}</span>
      {props.onRetry ? (
        <button type="button" className="secondary small-button" onClick={props.onRetry}>
          Retry
        </button>
      ) : null}
    </div>
  );
}

/**
 * The key list (useKeyNames) did not answer: keys show as their ids' first characters meanwhile, and
 * the list is asked for again every 5 s; never a silent fallback.
 */
export function KeyNamesError(props: { error: unknown; onRetry: () => void }) {
  if (!props.error) return null;
  return (
    <div className="error" role="alert" data-testid="key-names-error">
      <span>
        Key names could not be loaded ({describeError(props.error)}): keys show as the first characters of
        their id until they are. Asking again every 5 s.
      </span>
      <button type="button" className="secondary small-button" onClick={props.onRetry}>
        Retry
      </button>
    </div>
  );
}

/** Shown while a page's data is on its way (never the "nothing yet" text). */
export function Loading(props: { label?: string }) {
  return (
    <div className="loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" />
      {props.label ?? 'Loading…'}
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
  useEffect(() => {
    document.title = `${props.title} · Tollgate`;
  }, [props.title]);
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
  <span className={`badge badge-${props.kind.replaceAll(' ', '-')}`}>{props.children}</span>
);

/** A long free text (an X-Title, a model id) cut to its cell with an ellipsis; the whole text on hover. */
export const Clip = (props: { text: string; className?: string }) => (
  <span className={`clip ${props.className ?? ''}`} title={props.text}>
    {props.text}
  </span>
);
