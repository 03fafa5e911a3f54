/**
 * The lane's schedules (docs/api.md "Schedules"), a page at a time by name: when each fires (a cron
 * expression in its time zone, or an interval), its next and last fire and the job it enqueues;
 * pause or resume one, and delete one, confirmed first. `fires` grows with every job a schedule
 * enqueues (its id is `<name>@<T>`), which moves that schedule's next and last fire: the page reloads.
 */
import { useEffect, useState } from "hono/jsx/dom";
import { useAction } from "./action.js";
import { useAlive } from "./alive.js";
import { describe, lanePath, type Api } from "./api.js";
import { Alert, Notice, Pager, Section, When } from "./components.js";
import { dateTime, duration } from "./format.js";
import { useCoalescedReload } from "./reload.js";
import { href } from "./router.js";
import type { Schedule, SchedulePage } from "./types.js";

const PAGE_SIZE = 20;
const RELOAD_EVERY_MS = 1_000;

export function SchedulesPanel({ api, lane, fires }: { api: Api; lane: string; fires: number }) {
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [page, setPage] = useState<SchedulePage | null>(null);
  const [unreadable, setUnreadable] = useState<string | null>(null);
  const { busy, problem, notice, run } = useAction();
  // Pausing and deleting schedules is an admin's (docs/api.md "Access").
  const writer = api.can("PUT", "/v1/lanes/{lane}/schedules/{name}", lane);
  const current = cursors[cursors.length - 1] ?? null;
  const alive = useAlive();
  const schedulePath = (name: string) => `${lanePath(lane)}/schedules/${encodeURIComponent(name)}`;

  const reload = useCoalescedReload(async () => {
    try {
      const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
      if (current !== null) query.set("cursor", current);
      const fresh = await api.get<SchedulePage>(`${lanePath(lane)}/schedules?${query}`);
      if (!alive.current) return;
      setPage(fresh);
      setUnreadable(null);
    } catch (error) {
      if (alive.current) setUnreadable(`Could not list the schedules: ${describe(error)}`);
    }
  }, RELOAD_EVERY_MS);
  useEffect(() => reload.now(), [api, lane, current]);
  useEffect(() => {
    if (fires > 0) reload.soon();
  }, [fires]);

  const setPaused = (schedule: Schedule, paused: boolean) =>
    void run(async () => {
      // A PUT replaces a schedule whole, so it carries the stored definition with `paused` flipped.
      const { schedule: stored } = await api.put<{ schedule: Schedule }>(schedulePath(schedule.name), { ...definition(schedule), paused });
      reload.now();
      return paused
        ? `Paused schedule ${stored.name}: it fires nothing until resumed.`
        : `Resumed schedule ${stored.name}: it fires next at ${dateTime(stored.nextRunAt)}.`;
    });
  const remove = (schedule: Schedule) => {
    if (!confirm(`Delete schedule ${schedule.name} of lane ${lane}? The jobs it enqueued stay. This cannot be undone.`)) return;
    void run(async () => {
      await api.delete<{ deleted: true }>(schedulePath(schedule.name));
      reload.now();
      return `Deleted schedule ${schedule.name}.`;
    });
  };

  return (
    <Section title="Schedules">
      <Alert message={unreadable} />
      <Alert message={problem} />
      <Notice message={notice} />
      {page === null ? (
        <p class="muted">Loading…</p>
      ) : page.schedules.length === 0 ? (
        <p class="muted">{cursors.length > 1 ? "No schedules on this page." : "This lane has no schedules (PUT …/schedules/{name} makes one)."}</p>
      ) : (
        <div class="scroll">
          <table class="grid" data-testid="schedules">
            <thead>
              <tr>
                <th>Name</th>
                <th>Fires</th>
                <th>Time zone</th>
                <th>Next run</th>
                <th>Last run</th>
                <th>Job</th>
                <th>State</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {page.schedules.map((s) => (
                <tr key={s.name} data-schedule={s.name} data-paused={String(s.paused)}>
                  <td class="id">{s.name}</td>
                  <td>{s.cron !== null ? <code>{s.cron}</code> : s.everyMs !== null ? `every ${duration(s.everyMs)}` : "—"}</td>
                  <td>{s.timezone ?? "—"}</td>
                  <td class="nowrap" data-testid="next-run">
                    <When ms={s.nextRunAt} />
                  </td>
                  <td class="nowrap">
                    <When ms={s.lastRunAt} />
                    {s.lastJobId !== null ? (
                      <>
                        {" "}
                        <a href={href({ view: "job", lane, id: s.lastJobId })}>{s.lastJobId}</a>
                      </>
                    ) : null}
                  </td>
                  <td>
                    {s.job.kind}
                    {s.job.queue ? <span class="muted">{` in queue ${s.job.queue}`}</span> : null}
                  </td>
                  <td>{s.paused ? <span class="badge badge-paused">paused</span> : <span class="badge badge-running">active</span>}</td>
                  <td>
                    {writer && (
                      <span class="actions">
                        <button type="button" disabled={busy} onClick={() => setPaused(s, !s.paused)}>
                          {s.paused ? "Resume" : "Pause"}
                        </button>
                        <button type="button" class="danger" disabled={busy} onClick={() => remove(s)}>
                          Delete…
                        </button>
                      </span>
                    )}
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

/** A schedule's definition as its PUT takes it: exactly one of cron (with its zone) and everyMs, and the job. */
function definition(schedule: Schedule): Record<string, unknown> {
  const when = schedule.cron !== null ? { cron: schedule.cron, ...(schedule.timezone !== null ? { timezone: schedule.timezone } : {}) } : { everyMs: schedule.everyMs };
  return { ...when, job: schedule.job };
}
