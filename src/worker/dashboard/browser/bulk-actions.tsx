/**
 * Bulk actions on the jobs the job table's filter shows (docs/api.md "Bulk actions"), for admins:
 * requeue, cancel (with a reason) or delete every job enqueued before now that matches it, confirmed
 * first; then its progress, read again every second until it is done. A lane runs one at a time: a
 * start refused because another runs shows that one's progress instead. An empty filter is not
 * offered (the API refuses "everything" by accident).
 */
import { useState } from "hono/jsx/dom";
import { useAction } from "./action.js";
import { useAlive } from "./alive.js";
import { ApiError, lanePath, type Api } from "./api.js";
import { Alert, Notice } from "./components.js";
import { useSingleEffect } from "./single-effect.js";
import type { Bulk, BulkAction } from "./types.js";

const PROGRESS_EVERY_MS = 1_000;

/** The job table's filter, as its form holds it ("" for any). */
export interface TableFilter {
  state: string;
  outcome: string;
  kind: string;
  queue: string;
}

const VERBS: Record<BulkAction, string> = { requeue: "Requeue", cancel: "Cancel", delete: "Delete" };

/** What the action says it does to the matching jobs, for the confirmation. */
const EFFECTS: Record<BulkAction, string> = {
  requeue: "failed, cancelled and interrupted jobs go back to queued with a fresh attempt budget",
  cancel: "queued and blocked jobs are cancelled, running ones are asked to stop",
  delete: "settled jobs are deleted with their checkpoints; this cannot be undone",
};

export function BulkActions({ api, lane, filter }: { api: Api; lane: string; filter: TableFilter }) {
  const { busy, problem, notice, run } = useAction();
  const [bulk, setBulk] = useState<Bulk | null>(null);
  const alive = useAlive();
  const allowed = api.can("POST", "/v1/lanes/{lane}/bulk", lane);
  const fields = Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== ""));
  const described = Object.entries(fields).map(([k, v]) => `${k} ${v}`).join(", ");

  // Its progress, read again while it runs: one timer per read, each read's answer arming the next.
  useSingleEffect(() => {
    if (bulk === null || bulk.state === "done") return;
    const timer = setTimeout(() => {
      api.get<{ bulk: Bulk }>(`${lanePath(lane)}/bulk/${encodeURIComponent(bulk.id)}`).then(
        (fresh) => alive.current && setBulk(fresh.bulk),
        () => alive.current && setBulk({ ...bulk }), // try again
      );
    }, PROGRESS_EVERY_MS);
    return () => clearTimeout(timer);
  }, [bulk]);

  const start = (action: BulkAction, reason: string) => {
    const question = `${VERBS[action]} every job of lane ${lane} enqueued before now that matches ${described}? (${EFFECTS[action]}.)`;
    if (!confirm(question)) return;
    void run(async () => {
      try {
        const body = action === "cancel" && reason !== "" ? { action, filter: fields, reason } : { action, filter: fields };
        const answer = await api.post<{ bulk: Bulk }>(`${lanePath(lane)}/bulk`, body);
        if (alive.current) setBulk(answer.bulk);
        return `${VERBS[action]} started.`;
      } catch (error) {
        const running = error instanceof ApiError && error.code === "bulk_running" ? (error.details as { bulk?: Bulk } | undefined)?.bulk : undefined;
        if (running && alive.current) setBulk(running);
        throw error;
      }
    });
  };
  const submit = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const submitter = (event as SubmitEvent).submitter as HTMLButtonElement | null;
    const action = (submitter?.value ?? "") as BulkAction;
    if (!(action in VERBS)) return;
    start(action, (form.elements.namedItem("reason") as HTMLInputElement).value.trim());
  };

  if (!allowed) return null;
  const empty = described === "";
  return (
    <div class="controls" data-testid="bulk-actions">
      <form class="control" onSubmit={submit}>
        <span>{empty ? "Filter the jobs to act on them all at once: " : `Every job that matches ${described}: `}</span>
        {(["requeue", "cancel", "delete"] as const).map((action) => (
          <button type="submit" name="action" value={action} key={action} class={action === "requeue" ? "" : "danger"} disabled={busy || empty || bulk?.state === "running"}>
            {`${VERBS[action]} all…`}
          </button>
        ))}
        <label>
          reason (cancel) <input name="reason" placeholder="optional" />
        </label>
      </form>
      <Alert message={problem} />
      <Notice message={notice} />
      {bulk && (
        <p class="muted" data-testid="bulk-progress" data-state={bulk.state}>
          {`${VERBS[bulk.action]} ${bulk.id}: ${bulk.state === "done" ? `done, ${bulk.matched ?? 0} matched` : "running"} · ${bulk.done} acted on, ${bulk.skipped} skipped`}
        </p>
      )}
    </div>
  );
}
