/**
 * A lane's jobs, filtered by state, outcome, kind and queue, a page at a time (the list's cursor),
 * in enqueue order. `changes` grows with every transition the lane reports; the page then reloads,
 * at most a few times a second, so new and settling jobs show without a reload of the page.
 */
import { useEffect, useState } from "hono/jsx/dom";
import { useAlive } from "./alive.js";
import { describe, lanePath, type Api } from "./api.js";
import { Alert, Pager, Section, StateBadge, When } from "./components.js";
import { BulkActions } from "./bulk-actions.js";
import { useCoalescedReload } from "./reload.js";
import { href } from "./router.js";
import { OUTCOMES, STATES, type Job } from "./types.js";

const PAGE_SIZE = 50;
/** Transitions that arrive closer together than this share one reload. */
const RELOAD_EVERY_MS = 250;

interface Filter {
  state: string;
  outcome: string;
  kind: string;
  queue: string;
}

const NO_FILTER: Filter = { state: "", outcome: "", kind: "", queue: "" };

export function JobTable({ api, lane, changes }: { api: Api; lane: string; changes: number }) {
  const [filter, setFilter] = useState<Filter>(NO_FILTER);
  /** The cursors of the pages before this one, and this one's (null: the first page). */
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [page, setPage] = useState<{ jobs: Job[]; cursor: string | null } | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const current = cursors[cursors.length - 1] ?? null;
  const alive = useAlive();

  const reload = useCoalescedReload(async () => {
    try {
      const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
      for (const [key, value] of Object.entries(filter)) if (value !== "") query.set(key, value);
      if (current !== null) query.set("cursor", current);
      const fresh = await api.get<{ jobs: Job[]; cursor: string | null }>(`${lanePath(lane)}/jobs?${query}`);
      if (!alive.current) return;
      setPage(fresh);
      setProblem(null);
    } catch (error) {
      if (alive.current) setProblem(`Could not list the jobs: ${describe(error)}`);
    }
  }, RELOAD_EVERY_MS);

  useEffect(() => reload.now(), [api, lane, filter, current]);
  useEffect(() => {
    if (changes > 0) reload.soon();
  }, [changes]);

  const applyFilter = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const value = (name: string) => (form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement).value.trim();
    setFilter({ state: value("state"), outcome: value("outcome"), kind: value("kind"), queue: value("queue") });
    setCursors([null]);
  };

  return (
    <Section title="Jobs">
      <form class="filters" onSubmit={applyFilter} onChange={(e: Event) => (e.target as HTMLElement).tagName === "SELECT" && applyFilter(e)}>
        <label>
          State
          <select name="state">
            <option value="">any</option>
            {STATES.map((s) => (
              <option value={s} selected={filter.state === s} key={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Outcome
          <select name="outcome">
            <option value="">any</option>
            {OUTCOMES.map((o) => (
              <option value={o} selected={filter.outcome === o} key={o}>
                {o}
              </option>
            ))}
          </select>
        </label>
        <label>
          Kind <input name="kind" placeholder="any" />
        </label>
        <label>
          Queue <input name="queue" placeholder="any" />
        </label>
        <button type="submit">Filter</button>
      </form>
      <BulkActions api={api} lane={lane} filter={filter} />
      <Alert message={problem} />
      {page === null ? (
        <p class="muted">Loading…</p>
      ) : page.jobs.length === 0 ? (
        <p class="muted">No jobs{cursors.length > 1 ? " on this page" : filter === NO_FILTER ? "" : " match"}.</p>
      ) : (
        <div class="scroll">
        <table class="grid" data-testid="jobs">
          <thead>
            <tr>
              <th>Id</th>
              <th>Kind</th>
              <th>State</th>
              <th class="num">Attempts</th>
              <th>Queue</th>
              <th>Run at</th>
              <th>Error</th>
            </tr>
          </thead>
          <tbody>
            {page.jobs.map((job) => (
              <tr key={job.id} data-job={job.id} data-state={job.state} data-outcome={job.outcome ?? ""}>
                <td class="id">
                  <a href={href({ view: "job", lane, id: job.id })}>{job.id}</a>
                </td>
                <td>{job.kind}</td>
                <td>
                  <StateBadge state={job.state} outcome={job.outcome} />
                  {job.cancelRequested && job.state !== "settled" ? <span class="muted"> cancelling</span> : null}
                </td>
                <td class="num">{`${job.attempts}/${job.maxAttempts}`}</td>
                <td>{job.queue ?? "—"}</td>
                <td class="nowrap">
                  <When ms={job.runAt} />
                </td>
                <td class="error-cell" title={job.error ?? ""}>
                  {job.error ?? ""}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        </div>
      )}
      <Pager cursors={cursors} next={page?.cursor ?? null} onChange={setCursors} />
    </Section>
  );
}
