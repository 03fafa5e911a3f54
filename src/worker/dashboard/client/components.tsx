/**
 * Small pieces every view uses. Everything from the server is rendered as text (JSX children and
 * attributes, never HTML), so a payload like `<img src=x onerror=…>` is shown, not run.
 */
import type { Child } from "hono/jsx/dom";
import { dateTime, relative } from "./format.js";
import { COUNT_KEYS, type Counts } from "./types.js";

export function CountsStrip({ counts }: { counts: Counts | null }) {
  return (
    <dl class="counts" data-testid="counts">
      {COUNT_KEYS.map((key) => (
        <div class={`count count-${key}`} data-count={key} key={key}>
          <dt>{key}</dt>
          <dd>{counts ? String(counts[key] ?? 0) : "…"}</dd>
        </div>
      ))}
    </dl>
  );
}

export function StateBadge({ state, outcome }: { state: string; outcome: string | null }) {
  const label = state === "settled" && outcome ? outcome : outcome ? `${state} (${outcome})` : state;
  return <span class={`badge badge-${state === "settled" && outcome ? outcome : state}`}>{label}</span>;
}

/** Any JSON value, pretty-printed as text. */
export function Json({ value }: { value: unknown }) {
  return <pre class="json">{value === undefined ? "—" : JSON.stringify(value, null, 2)}</pre>;
}

/** An instant: local date and time, relative time as its title. */
export function When({ ms }: { ms: number | null | undefined }) {
  if (ms === null || ms === undefined) return <span class="muted">—</span>;
  return <time title={relative(ms)}>{dateTime(ms)}</time>;
}

export function Alert({ message }: { message: string | null }) {
  return message ? <p class="alert" role="alert">{message}</p> : null;
}

export function Notice({ message }: { message: string | null }) {
  return message ? <p class="notice" role="status">{message}</p> : null;
}

export function Section({ title, children, actions }: { title: string; children?: Child; actions?: Child }) {
  return (
    <section class="panel">
      <header class="panel-head">
        <h2>{title}</h2>
        {actions ?? null}
      </header>
      {children}
    </section>
  );
}
