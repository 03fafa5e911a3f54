/**
 * A queue (serial key) of the lane, looked up by name (docs/api.md "Queues"): the job that holds it, or
 * else runs next, and how many of its jobs wait, kept current as the lane's transitions arrive; and
 * purging its queued jobs, confirmed first (a running head runs on).
 */
import { duration } from "./format.js";
import { useEffect, useState } from "hono/jsx/dom";
import { useAction } from "./action.js";
import { useAlive } from "./alive.js";
import { describe, lanePath, type Api } from "./api.js";
import { Alert, Notice, Section, StateBadge } from "./components.js";
import { useCoalescedReload } from "./reload.js";
import { href } from "./router.js";
import type { PurgeAnswer, QueueInfo } from "./types.js";

const RELOAD_EVERY_MS = 500;

export function QueuePanel({ api, lane, changes }: { api: Api; lane: string; changes: number }) {
  const [queue, setQueue] = useState<string | null>(null);
  const [info, setInfo] = useState<QueueInfo | null>(null);
  const [unreadable, setUnreadable] = useState<string | null>(null);
  const { busy, problem, notice, run } = useAction();
  const alive = useAlive();
  const path = queue === null ? null : `${lanePath(lane)}/queues/${encodeURIComponent(queue)}`;

  const reload = useCoalescedReload(async () => {
    if (path === null) return;
    try {
      const fresh = await api.get<QueueInfo>(path);
      if (!alive.current) return;
      setInfo(fresh);
      setUnreadable(null);
    } catch (error) {
      if (!alive.current) return;
      setInfo(null);
      setUnreadable(`Could not read queue ${queue}: ${describe(error)}`);
    }
  }, RELOAD_EVERY_MS);
  useEffect(() => reload.now(), [api, path]);
  useEffect(() => {
    if (changes > 0 && path !== null) reload.soon();
  }, [changes]);

  const lookUp = (event: Event) => {
    event.preventDefault();
    const name = ((event.currentTarget as HTMLFormElement).elements.namedItem("queue") as HTMLInputElement).value.trim();
    if (name === queue) reload.now();
    else setQueue(name);
  };
  // Shown only once the answer is this queue's: a slow answer about the previous name is not.
  const shown = info !== null && info.queue === queue ? info : null;
  const purge = () => {
    if (shown === null || path === null) return;
    const { queue: name, queued } = shown;
    if (!confirm(`Delete the ${queued} queued job${queued === 1 ? "" : "s"} of queue ${name} in lane ${lane}? A running head runs on. This cannot be undone.`)) return;
    void run(async () => {
      const { purged } = await api.post<PurgeAnswer>(`${path}/purge`);
      reload.now();
      return `Purged ${purged} queued job${purged === 1 ? "" : "s"} of queue ${name}.`;
    });
  };

  return (
    <Section title="Queue">
      <form class="control" onSubmit={lookUp} data-testid="queue-lookup">
        <label>
          Queue name <input name="queue" required pattern="[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}" placeholder="user-9" />
        </label>
        <button type="submit">Look up</button>
      </form>
      <Alert message={unreadable} />
      {shown && (
        <div data-testid="queue" data-queue={shown.queue}>
          <dl class="fields">
            <dt>Queue</dt>
            <dd>{shown.queue}</dd>
            <dt>{shown.head?.state === "queued" ? "Runs next" : "Held by"}</dt>
            <dd data-testid="queue-head" data-state={shown.head?.state ?? "idle"}>
              {shown.head === null ? (
                <span class="muted">nobody: the queue is idle</span>
              ) : (
                <>
                  <a href={href({ view: "job", lane, id: shown.head.id })}>{shown.head.id}</a> <StateBadge state={shown.head.state} outcome={null} />
                  {shown.head.cancelRequested ? <span class="muted"> cancel requested</span> : null}
                </>
              )}
            </dd>
            <dt>Queued</dt>
            <dd data-testid="queue-queued">{String(shown.queued)}</dd>
            <dt>Running</dt>
            <dd data-testid="queue-running">{String(shown.running ?? 0)}</dd>
            <dt>Concurrency</dt>
            <dd data-testid="queue-concurrency">{String(shown.concurrency ?? 1)}</dd>
            <dt>Rate limit</dt>
            <dd data-testid="queue-rate-limit">{rateText(shown.rateLimit ?? null)}</dd>
          </dl>
          {api.can("POST", "/v1/lanes/{lane}/queues/{queue}/purge", lane) && (
            <p>
              <button type="button" class="danger" disabled={busy || shown.queued === 0} onClick={purge}>
                Purge queued jobs…
              </button>
            </p>
          )}
        </div>
      )}
      <Alert message={problem} />
      <Notice message={notice} />
    </Section>
  );
}

/** A token bucket as a person reads it: "10 per 1 s", or "none". */
export function rateText(rate: { limit: number; periodMs: number } | null): string {
  return rate === null ? "none" : `${rate.limit} per ${duration(rate.periodMs)}`;
}
