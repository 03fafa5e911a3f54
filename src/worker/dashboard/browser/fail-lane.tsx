/**
 * Failing a lane (docs/api.md "The lane"), for a lane whose downstream is gone for good: confirmed first,
 * then each call settles a batch of queued and running jobs `failed` with the reason, and while the
 * server says more are left the control offers the next call. The next call is not confirmed again:
 * the operator confirmed failing every job of the lane, and it carries the reason they confirmed.
 */
import { useState } from "hono/jsx/dom";
import { useAction } from "./action.js";
import { useAlive } from "./alive.js";
import { lanePath, type Api } from "./api.js";
import { Alert, Notice } from "./components.js";
import type { FailLaneAnswer } from "./types.js";

export function FailLane({ api, lane }: { api: Api; lane: string }) {
  const { busy, problem, notice, run } = useAction();
  /** More jobs are left: the confirmed reason, and how many this run has failed so far. */
  const [left, setLeft] = useState<{ reason: string; failed: number } | null>(null);
  const alive = useAlive();
  // Failing a lane is an admin's (docs/api.md "Access"): other tokens are not offered it.
  const allowed = api.can("POST", "/v1/lanes/{lane}/fail", lane);

  const failBatch = (reason: string, before: number) =>
    run(async () => {
      const { failed, more } = await api.post<FailLaneAnswer>(`${lanePath(lane)}/fail`, { reason });
      const total = before + failed.length;
      if (alive.current) setLeft(more ? { reason, failed: total } : null);
      const jobs = `${total} job${total === 1 ? "" : "s"}`;
      return more ? `Failed ${jobs} so far: more are queued or running.` : `Failed ${jobs}: none are left.`;
    });
  const submit = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const reason = (form.elements.namedItem("reason") as HTMLInputElement).value.trim();
    if (reason === "") return;
    const question = `Fail every queued and running job of lane ${lane} with the error "${reason}"? Running attempts are aborted. This cannot be undone.`;
    if (!confirm(question)) return;
    setLeft(null);
    void failBatch(reason, 0);
  };

  if (!allowed) return null;
  return (
    <div class="controls" data-testid="fail-lane">
      <form class="control" onSubmit={submit}>
        <label>
          Fail every queued and running job, with the error <input name="reason" required placeholder="downstream gone for good" />
        </label>
        <button type="submit" class="danger" disabled={busy}>
          Fail lane…
        </button>
        {left && (
          <button type="button" class="danger" disabled={busy} onClick={() => void failBatch(left.reason, left.failed)}>
            Fail more
          </button>
        )}
      </form>
      <Alert message={problem} />
      <Notice message={notice} />
    </div>
  );
}
