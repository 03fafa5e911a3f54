/**
 * One lane, live over its events socket: the counts as the lane sends them (and its lifetime stats,
 * read again whenever counts arrive), the transitions as they happen, the controls, the job table
 * (which reloads its page when a transition arrives), a queue's head, and the schedules.
 */
import { useCallback, useEffect, useState } from "hono/jsx/dom";
import { useAlive } from "./alive.js";
import { describe, lanePath, type Api } from "./api.js";
import { LaneCharts } from "./charts.js";
import { Alert, CountsStrip, Section, StateBadge, StatsStrip } from "./components.js";
import { FailLane } from "./fail-lane.js";
import { clockTime } from "./format.js";
import { JobTable } from "./job-table.js";
import { LaneControls } from "./lane-controls.js";
import { useLaneEvents, type LaneMessage, type TransitionMessage } from "./live.js";
import { QueuePanel } from "./queue-panel.js";
import { useCoalescedReload } from "./reload.js";
import { href } from "./router.js";
import { SchedulesPanel } from "./schedules-panel.js";
import { WaitpointsPanel } from "./waitpoints-panel.js";
import type { Counts, LaneInfo } from "./types.js";

const FEED_LENGTH = 40;
const STATS_EVERY_MS = 1_000;

export function LaneView({ api, lane }: { api: Api; lane: string }) {
  const [info, setInfo] = useState<LaneInfo | null>(null);
  const [counts, setCounts] = useState<Counts | null>(null);
  const [feed, setFeed] = useState<TransitionMessage[]>([]);
  const [changes, setChanges] = useState(0);
  /** Jobs enqueued by a schedule's fire (ids `<name>@<T>`), and reconnects, which may have missed some. */
  const [fires, setFires] = useState(0);
  const [problem, setProblem] = useState<string | null>(null);
  const alive = useAlive();

  const reload = useCallback(async () => {
    try {
      const fresh = await api.get<LaneInfo>(lanePath(lane));
      if (!alive.current) return;
      setInfo(fresh);
      setCounts(fresh.counts);
    } catch (error) {
      if (alive.current) setProblem(`Could not read the lane: ${describe(error)}`);
    }
  }, [api, lane]);
  useEffect(() => void reload(), [reload]);
  // The lifetime stats move with the counts; the counts themselves come from the socket, which is
  // fresher than any read that answers after it, so a refresh takes the rest of the lane only.
  const refresh = useCoalescedReload(async () => {
    try {
      const fresh = await api.get<LaneInfo>(lanePath(lane));
      if (alive.current) setInfo(fresh);
    } catch {
      // the next counts or hello try again; the first read's problem, if any, is shown
    }
  }, STATS_EVERY_MS);

  const live = useLaneEvents(api, lane, (message: LaneMessage) => {
    if (message.type === "hello") {
      const { type: _, ...hello } = message;
      // Merged into the lane's own read (read again: a hello lacks the stats and the retention); a
      // sharded lane's hello speaks for the whole lane, as its read does.
      setInfo((old) => (old === null ? old : { ...old, ...hello }));
      refresh.soon();
      setCounts(message.counts);
      setChanges((n) => n + 1); // a reconnect may have missed transitions
      setFires((n) => n + 1);
    } else if (message.type === "counts") {
      setCounts(message.counts);
      refresh.soon();
    } else if (message.type === "transition") {
      setFeed((old) => [message, ...old].slice(0, FEED_LENGTH));
      setChanges((n) => n + 1);
      if (message.from === null && message.id.includes("@")) setFires((n) => n + 1);
    }
  });

  return (
    <div class="lane-view">
      <Section
        title={`Lane ${lane}`}
        actions={
          <span class={`live live-${live}`} data-testid="live" title="the lane's events socket">
            {live === "live" ? "● live" : live === "connecting" ? "○ connecting…" : live === "denied" ? "○ not live: this token opens no events" : "○ offline, retrying"}
          </span>
        }
      >
        <Alert message={problem} />
        <CountsStrip counts={counts} />
        {info?.shardList && (
          <p class="muted" data-testid="shards">
            {`${String(info.shardList.length)} shards: `}
            {info.shardList.map((s) => `#${String(s.shard)} ${String(s.counts.queued)} queued, ${String(s.counts.running)} running`).join(" · ")}
          </p>
        )}
        {info?.stats && <StatsStrip stats={info.stats} />}
        {info && (
          <LaneControls
            api={api}
            info={info}
            onChanged={(fresh) => {
              setInfo(fresh);
              setCounts(fresh.counts);
              setChanges((n) => n + 1);
            }}
          />
        )}
        <FailLane api={api} lane={lane} />
        {api.can("POST", "/v1/lanes/{lane}/jobs", lane) && (
          <p>
            <a href={href({ view: "enqueue", lane })}>Enqueue a job in this lane</a>
          </p>
        )}
      </Section>
      {api.can("GET", "/v1/lanes/{lane}/history", lane) && <LaneCharts api={api} lane={lane} changes={changes} />}
      <div class="columns">
        <JobTable api={api} lane={lane} changes={changes} />
        <Section title="Transitions">
          {feed.length === 0 ? (
            <p class="muted">None yet: they appear here as they happen.</p>
          ) : (
            <ol class="feed" data-testid="feed">
              {feed.map((t, i) => (
                <li key={`${t.at}-${t.id}-${t.to}-${i}`}>
                  <time>{clockTime(t.at)}</time> <a href={href({ view: "job", lane, id: t.id })}>{t.id}</a>{" "}
                  <span class="muted">{t.from ?? "new"}</span> → <StateBadge state={t.to} outcome={t.outcome} />
                  {t.attempt > 0 ? <span class="muted"> attempt {String(t.attempt)}</span> : null}
                </li>
              ))}
            </ol>
          )}
        </Section>
      </div>
      <div class="columns">
        <SchedulesPanel api={api} lane={lane} fires={fires} />
        <QueuePanel api={api} lane={lane} changes={changes} />
      </div>
      {api.can("GET", "/v1/lanes/{lane}/waitpoints", lane) && <WaitpointsPanel api={api} lane={lane} changes={changes} pending={info?.waitpoints?.pending ?? null} onRead={() => refresh.soon()} />}
    </div>
  );
}
