/**
 * A lane's throughput (attempts started, jobs completed and failed per minute) and depth (queued
 * jobs) over the last hour or day, drawn with uPlot from `GET /v1/lanes/{lane}/history`. Live: the
 * history is read again after transitions arrive (at most every few seconds) and every half minute
 * (a quiet lane's chart still moves on to the next minute). Each chart's box carries what it plots
 * last (`data-last`, as uPlot holds it) and how many minutes (`data-points`), for tests and scripts.
 */
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import "./charts.css";
import { useEffect, useMemo, useRef, useState } from "hono/jsx/dom";
import { useAlive } from "./alive.js";
import { describe, lanePath, type Api } from "./api.js";
import { Alert, Section } from "./components.js";
import { useCoalescedReload } from "./reload.js";
import { useEvery, useSingleEffect } from "./single-effect.js";

/** One minute of a lane's history (docs/api.md, "Metrics"). */
export interface HistoryBucket {
  at: number;
  enqueued: number;
  started: number;
  completed: number;
  failed: number;
  depth: number;
}

type Span = "hour" | "day";
const SPANS: { span: Span; label: string; windowMs: number }[] = [
  { span: "hour", label: "Last hour", windowMs: 3_600_000 },
  { span: "day", label: "Last day", windowMs: 86_400_000 },
];
/** Transitions bring a read of the history at most this often. */
const READ_EVERY_MS = 2_000;
/** A lane with no transitions is read again this often, so that its charts roll on with the minutes. */
const ROLL_EVERY_MS = 30_000;
const HEIGHT = 200;

/** The colours of docs' states (style.css), which a canvas cannot read from CSS variables. */
const COLOURS = { started: "#2458d6", completed: "#1f8a4c", failed: "#c62f2f", depth: "#6b7385" };

export function LaneCharts({ api, lane, changes }: { api: Api; lane: string; changes: number }) {
  const [span, setSpan] = useState<Span>("hour");
  const [history, setHistory] = useState<{ span: Span; buckets: HistoryBucket[] } | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const alive = useAlive();
  const reload = useCoalescedReload(async () => {
    const windowMs = SPANS.find((s) => s.span === span)!.windowMs;
    try {
      const { buckets } = await api.get<{ buckets: HistoryBucket[] }>(`${lanePath(lane)}/history?windowMs=${windowMs}`);
      if (!alive.current) return;
      setHistory({ span, buckets });
      setProblem(null);
    } catch (error) {
      if (alive.current) setProblem(`Could not read the lane's history: ${describe(error)}`);
    }
  }, READ_EVERY_MS);
  useEffect(() => reload.now(), [api, lane, span]);
  useEffect(() => {
    if (changes > 0) reload.soon();
  }, [changes]);
  useEvery(ROLL_EVERY_MS, () => reload.soon(), []);

  // A read of the other span, answered after the toggle, is not drawn.
  const buckets = history?.span === span ? history.buckets : null;
  // Made once per read: a render for another reason (every transition) hands the charts the same data.
  const [throughput, depth] = useMemo(() => {
    if (!buckets) return [null, null];
    const times = buckets.map((b) => b.at / 1000); // uPlot's time scale is in seconds
    return [
      [times, buckets.map((b) => b.started), buckets.map((b) => b.completed), buckets.map((b) => b.failed)],
      [times, buckets.map((b) => b.depth)],
    ];
  }, [buckets]);
  return (
    <Section
      title="Throughput and depth"
      actions={
        <span class="span-toggle" role="group" aria-label="time span">
          {SPANS.map((s) => (
            <button type="button" aria-pressed={s.span === span ? "true" : "false"} onClick={() => setSpan(s.span)}>
              {s.label}
            </button>
          ))}
        </span>
      }
    >
      <Alert message={problem} />
      <div class="charts" data-testid="charts" data-span={span}>
        <Plot
          id="throughput"
          title="Per minute: started, completed, failed"
          series={[
            { label: "started", stroke: COLOURS.started, width: 1.5 },
            { label: "completed", stroke: COLOURS.completed, width: 1.5 },
            { label: "failed", stroke: COLOURS.failed, width: 1.5 },
          ]}
          data={throughput}
        />
        <Plot
          id="depth"
          title="Depth: queued jobs at each minute's end"
          series={[{ label: "depth", stroke: COLOURS.depth, fill: "rgba(107, 115, 133, 0.15)", width: 1.5 }]}
          data={depth}
        />
      </div>
    </Section>
  );
}

/** One uPlot chart, made once its box is in the page, its data replaced as new reads arrive. */
function Plot({ id, title, series, data }: { id: string; title: string; series: uPlot.Series[]; data: number[][] | null }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  // One chart per box: a second, its cleanup lost, would stay in the box beside it, never destroyed.
  useSingleEffect(() => {
    const element = box.current;
    if (!element) return;
    const chart = new uPlot(
      {
        width: Math.max(200, element.clientWidth),
        height: HEIGHT,
        series: [{ label: "minute" }, ...series],
        axes: [{}, { size: 48 }],
        scales: { y: { range: (_u, min, max) => [Math.min(0, min), Math.max(1, max)] } },
        cursor: { drag: { x: false, y: false } },
      },
      [[], ...series.map(() => [])],
      element,
    );
    plot.current = chart;
    const resize = new ResizeObserver(() => chart.setSize({ width: Math.max(200, element.clientWidth), height: HEIGHT }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
      plot.current = null;
    };
  }, []);
  useEffect(() => {
    const chart = plot.current;
    const element = box.current;
    if (!chart || !element || !data) return;
    chart.setData(data as uPlot.AlignedData);
    // What the chart holds now, read back from uPlot: its last minute, each series by its label.
    const held = chart.data;
    const last = held[0]!.length - 1;
    element.dataset.points = String(held[0]!.length);
    if (last < 0) return void delete element.dataset.last;
    const point: Record<string, number | null | undefined> = { at: held[0]![last]! * 1000 };
    series.forEach((s, i) => (point[String(s.label)] = held[i + 1]![last]));
    element.dataset.last = JSON.stringify(point);
  }, [data]);
  return (
    <div class="chart">
      <h3>{title}</h3>
      <div class="chart-box" ref={box} data-testid={`chart-${id}`} />
    </div>
  );
}
