/**
 * Every lane at a glance: counts, lifetime stats, paused, throughput (from the lifetime `stats` of two
 * reads), sortable by any column, refreshed every few seconds without a reload.
 */
import { useRef, useState } from "hono/jsx/dom";
import { describe, lanePath, type Api } from "./api.js";
import { Alert, Section } from "./components.js";
import { duration, rate } from "./format.js";
import { href } from "./router.js";
import { useSingleEffect } from "./single-effect.js";
import type { Counts, LaneInfo, LaneStats } from "./types.js";

const REFRESH_MS = 2_000;
/** Lanes read in detail (paused, stats) per refresh; the rest show the list's counts only. */
const DETAILED_LANES = 200;
/** Stats that mean "a job is done": their sum's growth is the throughput. */
const DONE_STATS = ["completed", "failed", "cancelled", "interrupted"] as const satisfies readonly (keyof LaneStats)[];

interface Row {
  lane: string;
  counts: Counts;
  info: LaneInfo | null;
  /** Jobs done per second since the previous refresh; null without stats. */
  throughput: number | null;
}

type Column = { key: string; label: string; title?: string; value: (row: Row) => number | string | null };

const count = (key: keyof Counts) => (row: Row) => row.counts[key] ?? 0;
/** Lifetime counters that counts do not show (counts hold what is stored now; these never go down). */
const LIFETIME = ["enqueued", "retried", "recovered", "lost"] as const satisfies readonly (keyof LaneStats)[];
const stat = (key: keyof LaneStats) => (row: Row) => row.info?.stats?.[key] ?? null;
const COLUMNS: Column[] = [
  { key: "lane", label: "Lane", value: (row) => row.lane },
  { key: "blocked", label: "Blocked", title: "waiting for their dependencies", value: count("blocked") },
  { key: "queued", label: "Queued", value: count("queued") },
  { key: "running", label: "Running", value: count("running") },
  { key: "completed", label: "Completed", value: count("completed") },
  { key: "failed", label: "Failed", value: count("failed") },
  { key: "cancelled", label: "Cancelled", value: count("cancelled") },
  { key: "interrupted", label: "Interrupted", value: count("interrupted") },
  ...LIFETIME.map((key) => ({ key, label: `${key[0]!.toUpperCase()}${key.slice(1)}`, title: "a lifetime counter: it never goes down", value: stat(key) })),
  { key: "throughput", label: "Done/s", value: (row) => row.throughput },
  { key: "behind", label: "Behind", value: (row) => (row.info?.oldestDueAt == null ? null : Date.now() - row.info.oldestDueAt) },
  { key: "paused", label: "Paused", value: (row) => (row.info ? (row.info.paused ? "paused" : "running") : null) },
];

export function LanesView({ api }: { api: Api }) {
  const [rows, setRows] = useState<Row[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [sort, setSort] = useState({ key: "lane", descending: false });
  const previous = useRef(new Map<string, { at: number; done: number }>());

  // Listing lanes is a viewer's (docs/api.md "Access"): a producer's or consumer's token cannot.
  const lister = api.can("GET", "/v1/lanes");

  // One refresh loop: a second, its cleanup lost, would read every lane again forever.
  useSingleEffect(() => {
    if (!lister) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const refresh = async () => {
      try {
        const listed = await listLanes(api);
        const infos = await Promise.all(
          listed.slice(0, DETAILED_LANES).map((l) => api.get<LaneInfo>(lanePath(l.lane)).catch(() => null)),
        );
        const now = Date.now();
        const next = listed.map((l, i): Row => {
          const info = infos[i] ?? null;
          return { lane: l.lane, counts: info?.counts ?? l.counts, info, throughput: throughput(previous.current, l.lane, info, now) };
        });
        if (!stopped) {
          setRows(next);
          setProblem(null);
        }
      } catch (error) {
        if (!stopped) setProblem(`Could not read the lanes: ${describe(error)}`);
      }
      if (!stopped) timer = setTimeout(refresh, REFRESH_MS);
    };
    void refresh();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [api]);

  const column = COLUMNS.find((c) => c.key === sort.key) ?? COLUMNS[0]!;
  const sorted = [...(rows ?? [])].sort((a, b) => compare(column.value(a), column.value(b)) * (sort.descending ? -1 : 1));
  const toggle = (key: string) => setSort((s) => ({ key, descending: s.key === key ? !s.descending : key !== "lane" }));

  if (!lister) {
    return (
      <Section title="Lanes">
        <p class="muted" data-testid="cannot-list">
          This {api.access.role} token cannot list lanes.
          {api.can("POST", "/v1/lanes/{lane}/jobs") ? (
            <>
              {" "}
              <a href={href({ view: "enqueue", lane: null })}>Enqueue a job.</a>
            </>
          ) : null}
        </p>
      </Section>
    );
  }
  return (
    <Section title="Lanes">
      <Alert message={problem} />
      {rows === null ? (
        <p class="muted">Loading…</p>
      ) : rows.length === 0 ? (
        <p class="muted">
          No lane has had a job yet. <a href={href({ view: "enqueue", lane: null })}>Enqueue one.</a>
        </p>
      ) : (
        <table class="grid" data-testid="lanes">
          <thead>
            <tr>
              {COLUMNS.map((c) => (
                <th key={c.key} title={c.title ?? ""} aria-sort={sort.key === c.key ? (sort.descending ? "descending" : "ascending") : "none"}>
                  <button type="button" class="sort" onClick={() => toggle(c.key)}>
                    {c.label}
                    {sort.key === c.key ? (sort.descending ? " ▼" : " ▲") : ""}
                  </button>
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {sorted.map((row) => (
              <tr key={row.lane} data-lane={row.lane}>
                <td>
                  <a href={href({ view: "lane", lane: row.lane })}>{row.lane}</a>
                </td>
                {(["blocked", "queued", "running", "completed", "failed", "cancelled", "interrupted"] as const).map((key) => (
                  <td class="num" data-count={key} key={key}>
                    {String(row.counts[key] ?? 0)}
                  </td>
                ))}
                {LIFETIME.map((key) => (
                  <td class="num" data-stat={key} key={key}>
                    {row.info?.stats ? String(row.info.stats[key] ?? 0) : "—"}
                  </td>
                ))}
                <td class="num">{rate(row.throughput)}</td>
                <td class="num">{row.info?.oldestDueAt == null ? "—" : duration(Date.now() - row.info.oldestDueAt)}</td>
                <td>{row.info === null ? "—" : row.info.paused ? <span class="badge badge-paused">paused</span> : "no"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  );
}

/** Every lane, through the list's cursor. */
async function listLanes(api: Api): Promise<{ lane: string; counts: Counts }[]> {
  const lanes: { lane: string; counts: Counts }[] = [];
  let cursor: string | null = null;
  do {
    const query: string = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
    const page: { lanes: { lane: string; counts: Counts }[]; cursor: string | null } = await api.get(`/v1/lanes?limit=500${query}`);
    lanes.push(...page.lanes);
    cursor = page.cursor;
  } while (cursor !== null && lanes.length < 5_000);
  return lanes;
}

function throughput(seen: Map<string, { at: number; done: number }>, lane: string, info: LaneInfo | null, now: number): number | null {
  const stats = info?.stats;
  if (!stats) return null;
  const done = DONE_STATS.reduce((sum, key) => sum + (stats[key] ?? 0), 0);
  const before = seen.get(lane);
  seen.set(lane, { at: now, done });
  if (!before || now <= before.at) return null;
  return ((done - before.done) * 1000) / (now - before.at);
}

function compare(a: number | string | null, b: number | string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b));
}
