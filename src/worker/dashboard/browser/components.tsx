/**
 * Small pieces every view uses. Everything from the server is rendered as text (JSX children and
 * attributes, never HTML), so a payload like `<img src=x onerror=…>` is shown, not run.
 */
import type { Child } from "hono/jsx/dom";
import { dateTime, relative } from "./format.js";
import { COUNT_KEYS, STAT_KEYS, type Counts, type LaneInfo } from "./types.js";

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

/** What the less obvious lifetime counters count (docs/api.md "The lane"). */
const STAT_MEANINGS: Partial<Record<keyof LaneInfo["stats"], string>> = {
  claimed: "attempts started (in-process and pulled)",
  retried: "attempts that failed and were queued again",
  recovered: "expired leases whose jobs were queued again",
  lost: "in-process attempts that lost their lease",
  snoozed: "attempts that snoozed their job (queued for later, the attempt given back)",
  waitpointsCompleted: "waitpoints completed (by route, callback, or a completion that created one)",
  waitpointsTimedOut: "waitpoints that timed out",
};

/** A lane's lifetime counters: unlike counts, they never go down (sweeps and retention leave them). */
export function StatsStrip({ stats }: { stats: LaneInfo["stats"] }) {
  return (
    <div class="stats" data-testid="stats">
      <span class="muted" title="counters since the lane began: they never go down">
        Lifetime
      </span>
      <dl>
        {STAT_KEYS.map((key) => (
          <div data-stat={key} key={key} title={STAT_MEANINGS[key] ?? ""}>
            <dt>{key}</dt>
            <dd>{String(stats[key] ?? 0)}</dd>
          </div>
        ))}
      </dl>
    </div>
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

/**
 * Paging by the API's opaque cursors: `cursors` holds the cursor of every page read before this one
 * and this one's (null: the first page), so Previous goes back without the server's help.
 */
export function Pager({ cursors, next, onChange }: { cursors: (string | null)[]; next: string | null; onChange: (cursors: (string | null)[]) => void }) {
  return (
    <nav class="pager">
      <button type="button" disabled={cursors.length === 1} onClick={() => onChange([null])}>
        First
      </button>
      <button type="button" disabled={cursors.length === 1} onClick={() => onChange(cursors.slice(0, -1))}>
        Previous
      </button>
      <span class="muted">Page {String(cursors.length)}</span>
      <button type="button" disabled={next === null} onClick={() => next !== null && onChange([...cursors, next])}>
        Next
      </button>
    </nav>
  );
}
