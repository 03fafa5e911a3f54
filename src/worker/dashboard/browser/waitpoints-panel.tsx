/**
 * A lane's waitpoints of one state (pending by default: what its jobs, or the world, wait on now),
 * through the listing route, a page at a time; `pending` counts them all (the lane's
 * `waitpoints.pending`). A pending one can be completed from here (its result null), confirmed
 * first. Read again when the lane's transitions or pending count move (a job that waits, or is
 * released, is a transition), and every few seconds while open: a waitpoint made or completed
 * through the API moves no job.
 */
import { useEffect, useState } from "hono/jsx/dom";
import { useAction } from "./action.js";
import { useAlive } from "./alive.js";
import { describe, lanePath, waitpointPath, type Api } from "./api.js";
import { Alert, Notice, Pager, Section, When } from "./components.js";
import { useCoalescedReload } from "./reload.js";
import { useEvery } from "./single-effect.js";
import type { Waitpoint, WaitpointState } from "./types.js";
import { WaitpointBadge } from "./waits.js";

const PAGE = 50;
const RELOAD_EVERY_MS = 1_000;
const POLL_EVERY_MS = 5_000;
const STATES: WaitpointState[] = ["pending", "completed", "timedOut"];

/** `pending`: the lane's count, as its read said; `onRead`: each listing read, for the lane to read that count again. */
export function WaitpointsPanel({ api, lane, changes, pending, onRead }: { api: Api; lane: string; changes: number; pending: number | null; onRead: () => void }) {
  const [state, setState] = useState<WaitpointState>("pending");
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [page, setPage] = useState<{ waitpoints: Waitpoint[]; cursor: string | null } | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const action = useAction();
  const alive = useAlive();
  const cursor = cursors[cursors.length - 1] ?? null;
  const completes = api.can("POST", "/v1/lanes/{lane}/waitpoints/{id}/complete", lane);

  const reload = useCoalescedReload(async () => {
    const query = new URLSearchParams({ state, limit: String(PAGE) });
    if (cursor !== null) query.set("cursor", cursor);
    try {
      const fresh = await api.get<{ waitpoints: Waitpoint[]; cursor: string | null }>(`${lanePath(lane)}/waitpoints?${query}`);
      if (!alive.current) return;
      setPage(fresh);
      setProblem(null);
      onRead();
    } catch (error) {
      if (alive.current) setProblem(`Could not list the waitpoints: ${describe(error)}`);
    }
  }, RELOAD_EVERY_MS);
  useEffect(() => reload.now(), [api, lane, state, cursor]);
  useEffect(() => {
    if (changes > 0) reload.soon();
  }, [changes, pending]);
  useEvery(POLL_EVERY_MS, () => reload.soon(), []);

  const complete = (id: string) => {
    if (!confirm(`Complete waitpoint ${id} in lane ${lane} (result null)? The jobs waiting on it go on.`)) return;
    void action.run(async () => {
      await api.post(`${waitpointPath(lane, id)}/complete`, {});
      reload.now();
      return `Completed waitpoint ${id}.`;
    });
  };

  return (
    <Section title={`Waitpoints${pending === null ? "" : ` (${pending} pending)`}`}>
      <div class="filters">
        <label>
          State
          <select
            name="waitpoint-state"
            value={state}
            onChange={(e: Event) => {
              setState((e.currentTarget as HTMLSelectElement).value as WaitpointState);
              setCursors([null]);
            }}
          >
            {STATES.map((s) => (
              <option value={s} selected={s === state}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </div>
      <Alert message={problem ?? action.problem} />
      <Notice message={action.notice} />
      {page === null ? (
        <p class="muted">Loading…</p>
      ) : page.waitpoints.length === 0 ? (
        <p class="muted">{`No ${state} waitpoints.`}</p>
      ) : (
        <table class="grid" data-testid="waitpoints">
          <thead>
            <tr>
              <th>Id</th>
              <th>State</th>
              <th>Created</th>
              <th>{state === "pending" ? "Times out" : "Settled"}</th>
              <th class="num">Waiters</th>
              {completes && state === "pending" ? <th /> : null}
            </tr>
          </thead>
          <tbody>
            {page.waitpoints.map((w) => (
              <tr key={w.id} data-waitpoint={w.id} data-state={w.state}>
                <td class="id">{w.id}</td>
                <td>
                  <WaitpointBadge state={w.state} />
                </td>
                <td class="nowrap">
                  <When ms={w.createdAt} />
                </td>
                <td class="nowrap">
                  <When ms={state === "pending" ? w.timeoutAt : w.settledAt} />
                </td>
                <td class="num">{String(w.waiters)}</td>
                {completes && state === "pending" ? (
                  <td>
                    <button type="button" class="quiet" disabled={action.busy || w.state !== "pending"} onClick={() => complete(w.id)}>
                      Complete…
                    </button>
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {page !== null && (cursors.length > 1 || page.cursor !== null) && <Pager cursors={cursors} next={page.cursor} onChange={setCursors} />}
    </Section>
  );
}
