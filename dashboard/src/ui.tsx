// Shared pieces: form fields that show the problem+json message for their own field, the
// running/failed state of an action, confirmation dialogs, copy buttons and status messages.
import type { ComponentChildren, TargetedEvent } from "preact";
import { useRef, useState } from "preact/hooks";
import { failureOf, type Failure } from "./api.ts";

/** Runs an action, keeping whether it is running and how it failed. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure | undefined>();
  async function run<T>(action: () => Promise<T>): Promise<T | undefined> {
    setBusy(true);
    setFailure(undefined);
    try {
      return await action();
    } catch (error) {
      setFailure(failureOf(error));
      return undefined;
    } finally {
      setBusy(false);
    }
  }
  return { busy, failure, run, clear: () => setFailure(undefined) };
}

/** The input attributes the dashboard's forms use. */
interface InputProps {
  type?: "text" | "email" | "password" | "number";
  value: string;
  onInput: (e: TargetedEvent<HTMLInputElement>) => void;
  required?: boolean;
  autocomplete?: string;
  minLength?: number;
  maxLength?: number;
  min?: number;
  max?: number;
}

/** A labelled input whose error, when the server names this field, sits right under it. */
export function Field(
  props: InputProps & { name: string; label: string; failure?: Failure | undefined; hint?: string; form?: string },
) {
  const { name, label, failure, hint, form, ...input } = props;
  const id = `${form ?? "f"}-${name}`;
  const error = fieldError(failure, name);
  const describedBy = [hint ? `${id}-hint` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ") || undefined;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {/* Preact's input types are a union by `type`; these props are checked by InputProps above. */}
      <input
        {...(input as Record<string, unknown>)}
        id={id}
        name={name}
        aria-invalid={error ? "true" : undefined}
        aria-describedby={describedBy}
      />
      {error && (
        <p class="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}

/** Whether a problem's field name belongs to a form field: `referrers[1]` belongs to `referrers`. */
const belongsTo = (field: string, name: string) => field === name || field.startsWith(`${name}[`);

/** The messages a failure has for one form field (and its items), joined. */
export function fieldError(failure: Failure | undefined, name: string): string | undefined {
  const messages = Object.entries(failure?.fields ?? {})
    .filter(([field]) => belongsTo(field, name))
    .map(([, message]) => message);
  return messages.length ? messages.join("; ") : undefined;
}

/** The part of a failure no field shows. */
export function FormError({ failure, shown = [] }: { failure: Failure | undefined; shown?: string[] }) {
  if (!failure) return null;
  const others = Object.entries(failure.fields).filter(([field]) => !shown.some((name) => belongsTo(field, name)));
  return (
    <div class="error" role="alert">
      <p>{failure.message}</p>
      {others.length > 0 && (
        <ul>
          {others.map(([field, message]) => (
            <li key={field}>{field ? `${field}: ${message}` : message}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

export const Loading = ({ what }: { what: string }) => (
  <p class="loading" role="status">
    Loading {what}…
  </p>
);

export const Empty = ({ children }: { children: ComponentChildren }) => <div class="empty">{children}</div>;

/** A button that asks before it acts, in a modal dialog (focus moves in, Escape cancels). */
export function ConfirmButton(props: {
  label: string;
  /** The button's accessible name when `label` alone would be ambiguous in a list. */
  accessibleLabel?: string;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  onConfirm: () => Promise<unknown>;
  class?: string;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const action = useAction();
  const titleId = useRef(`confirm-${Math.random().toString(36).slice(2)}`).current;
  const confirm = async () => {
    const done = await action.run(async () => {
      await props.onConfirm();
      return true;
    });
    if (done) dialog.current?.close();
  };
  return (
    <>
      <button
        type="button"
        class={props.class ?? "danger"}
        aria-label={props.accessibleLabel}
        onClick={() => {
          action.clear();
          dialog.current?.showModal();
        }}
      >
        {props.label}
      </button>
      <dialog ref={dialog} aria-labelledby={titleId}>
        <h2 id={titleId}>{props.title}</h2>
        {props.children}
        <FormError failure={action.failure} />
        <div class="actions">
          <button type="button" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
          <button type="button" class="danger" disabled={action.busy} onClick={confirm}>
            {props.confirmLabel}
          </button>
        </div>
      </dialog>
    </>
  );
}

export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      onClick={async () => {
        await navigator.clipboard.writeText(text);
        setCopied(true);
        announce("Copied to the clipboard");
      }}
    >
      {copied ? "Copied" : label}
    </button>
  );
}

/** Says something to screen readers (and shows it briefly) without moving focus. */
export function announce(message: string): void {
  const region = document.getElementById("announcer");
  if (!region) return;
  region.textContent = "";
  // A change of text after a tick is announced even when the message repeats.
  setTimeout(() => {
    region.textContent = message;
  }, 30);
}

export function Code({ children, label }: { children: string; label: string }) {
  return (
    <div class="code">
      <pre>
        <code>{children}</code>
      </pre>
      <CopyButton text={children} label={`Copy ${label}`} />
    </div>
  );
}
