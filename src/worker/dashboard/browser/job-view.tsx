/**
 * One job: every field, its payload, result, progress, the waitpoints it waits on, its stream (live),
 * dependencies and dependents, checkpoints and errors, its lease; cancel and requeue.
 * Live: it reloads on each of its transitions (over the lane's events socket) and, while it runs,
 * every second for its progress and lease.
 */
import { useCallback, useEffect, useState } from "hono/jsx/dom";
import { useAlive } from "./alive.js";
import { ApiError, describe, jobPath, type Api } from "./api.js";
import { Checkpoints } from "./checkpoints.js";
import { Dependencies } from "./dependencies.js";
import { useEvery } from "./single-effect.js";
import { StreamPanel } from "./stream-panel.js";
import { Waits } from "./waits.js";
import { Alert, Json, Notice, Section, StateBadge, When } from "./components.js";
import { duration, relative } from "./format.js";
import { useLaneEvents } from "./live.js";
import { href } from "./router.js";
import type { Job } from "./types.js";

const RUNNING_REFRESH_MS = 1_000;
const REQUEUEABLE = ["failed", "cancelled", "interrupted"];

export function JobView({ api, lane, id }: { api: Api; lane: string; id: string }) {
  const [job, setJob] = useState<Job | null>(null);
  const [missing, setMissing] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  /** Grows with every read of the job: its checkpoints are read again with it. */
  const [reads, setReads] = useState(0);
  const path = jobPath(lane, id);
  const alive = useAlive();

  const reload = useCallback(async () => {
    try {
      const fresh = await api.get<Job>(path);
      if (!alive.current) return;
      setJob(fresh);
      setMissing(false);
      setReads((n) => n + 1);
    } catch (error) {
      if (!alive.current) return;
      if (error instanceof ApiError && error.code === "job_not_found") setMissing(true);
      else setProblem(`Could not read the job: ${describe(error)}`);
    }
  }, [api, path]);
  useEffect(() => void reload(), [reload]);
  // The lane's socket hears every shard of a sharded lane: the job's transitions, wherever it is.
  const live = useLaneEvents(api, lane, (message) => {
    if ((message.type === "transition" && message.id === id) || message.type === "hello") void reload();
  });
  const running = job?.state === "running";
  // One timer while it runs: a second, its cleanup lost, would read the job twice a second forever.
  useEvery(RUNNING_REFRESH_MS, () => void reload(), [reload], running);

  const act = async (what: string, call: () => Promise<{ job: Job; status?: string }>) => {
    setBusy(true);
    setProblem(null);
    setNotice(null);
    try {
      const answer = await call();
      if (!alive.current) return;
      setJob(answer.job);
      setNotice(answer.status === "cancelling" ? "Cancelling: the attempt is being stopped." : `${what}.`);
    } catch (error) {
      if (alive.current) setProblem(`${what} refused: ${describe(error)}`);
    } finally {
      if (alive.current) setBusy(false);
    }
  };
  const cancel = () => {
    if (!confirm(`Cancel job ${id}?`)) return;
    void act("Cancelled", () => api.post(`${path}/cancel`, { reason: "cancelled from the dashboard" }));
  };
  const requeue = () => void act("Requeued", () => api.post(`${path}/requeue`));

  if (missing) {
    return (
      <Section title={`Job ${id}`}>
        <p class="alert" role="alert">
          No job {id} in lane {lane} (it may have been swept).
        </p>
        {api.can("GET", "/v1/lanes/{lane}", lane) && <a href={href({ view: "lane", lane })}>Back to lane {lane}</a>}
      </Section>
    );
  }
  if (job === null) return <Section title={`Job ${id}`}>{problem ? <Alert message={problem} /> : <p class="muted">Loading…</p>}</Section>;
  const cancellable = api.can("POST", "/v1/lanes/{lane}/jobs/{id}/cancel", lane) && (job.state === "blocked" || job.state === "queued" || job.state === "running") && !job.cancelRequested;
  const requeueable = api.can("POST", "/v1/lanes/{lane}/jobs/{id}/requeue", lane) && job.state === "settled" && job.outcome !== null && REQUEUEABLE.includes(job.outcome);

  return (
    <div class="job-view" data-testid="job" data-state={job.state} data-outcome={job.outcome ?? ""} data-live={live}>
      <Section
        title={`Job ${job.id}`}
        actions={
          <span class="actions">
            {cancellable && (
              <button type="button" class="danger" disabled={busy} onClick={cancel}>
                Cancel…
              </button>
            )}
            {requeueable && (
              <button type="button" disabled={busy} onClick={requeue}>
                Requeue
              </button>
            )}
          </span>
        }
      >
        <Alert message={problem} />
        <Notice message={notice} />
        <dl class="fields">
          <dt>Lane</dt>
          <dd>{api.can("GET", "/v1/lanes/{lane}", lane) ? <a href={href({ view: "lane", lane })}>{lane}</a> : lane}</dd>
          <dt>Kind</dt>
          <dd>{job.kind}</dd>
          <dt>State</dt>
          <dd data-testid="job-state">
            <StateBadge state={job.state} outcome={job.outcome} />
            {job.cancelRequested && job.state !== "settled" ? " cancel requested" : ""}
          </dd>
          <dt>Attempts</dt>
          <dd>{`${job.attempts} of ${job.maxAttempts}`}</dd>
          <dt>Lease</dt>
          <dd>
            {job.lease ? `generation ${job.lease.generation}, expires ${relative(job.lease.expiresAt)}` : `none (generation ${job.generation})`}
          </dd>
          <dt>Queue</dt>
          <dd>{job.queue ?? "—"}</dd>
          <dt>Priority</dt>
          <dd>{String(job.priority)}</dd>
          <dt>Timeout</dt>
          <dd>{duration(job.timeoutMs)}</dd>
          <dt>Run at</dt>
          <dd>
            <When ms={job.runAt} />
          </dd>
          <dt>Created</dt>
          <dd>
            <When ms={job.createdAt} />
          </dd>
          <dt>Updated</dt>
          <dd>
            <When ms={job.updatedAt} />
          </dd>
          <dt>Settled</dt>
          <dd>
            <When ms={job.settledAt} />
          </dd>
          <dt>Error</dt>
          <dd class="error-text">{job.error ?? "—"}</dd>
        </dl>
      </Section>
      <div class="columns">
        <Section title="Payload">
          <Json value={job.payload} />
        </Section>
        <Section title="Result">
          <Json value={job.result} />
        </Section>
      </div>
      {job.progress !== undefined && job.progress !== null && (
        <Section title="Progress">
          <Json value={job.progress} />
        </Section>
      )}
      <Waits api={api} job={job} version={reads} />
      {api.can("GET", "/v1/lanes/{lane}/jobs/{id}/stream", lane) && <StreamPanel api={api} lane={lane} id={id} settled={job.state === "settled"} />}
      <Dependencies api={api} job={job} version={reads} />
      {api.can("GET", "/v1/lanes/{lane}/jobs/{id}/checkpoints", lane) && <Checkpoints api={api} lane={lane} id={id} version={reads} />}
      {job.errors && job.errors.length > 0 && (
        <Section title="Errors">
          <table class="grid" data-testid="errors">
            <thead>
              <tr>
                <th class="num">Attempt</th>
                <th class="num">Generation</th>
                <th>At</th>
                <th>Message</th>
              </tr>
            </thead>
            <tbody>
              {job.errors.map((e) => (
                <tr key={`${e.generation}-${e.attempt}`}>
                  <td class="num">{String(e.attempt)}</td>
                  <td class="num">{String(e.generation)}</td>
                  <td>
                    <When ms={e.at} />
                  </td>
                  <td class="error-text">{e.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
      )}
    </div>
  );
}
