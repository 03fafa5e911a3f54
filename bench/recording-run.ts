/**
 * What recording (the lane's per-minute history and its metrics reports) costs the drain, from Node
 * (run.ts calls it): the drain at concurrency 1 and 16 on LANE (recording on) and on QUIET_LANE (the
 * same class with recording off, bench/recording.ts), in repetitions whose order alternates, so that
 * the machine's drift weighs on both alike. A repetition's cost is the off drain's rate over the on
 * drain's (time with recording / time without); the figure is the median repetition's. Its targets
 * are `recordingTargets`, beside every other target.
 * Node runs this file by type stripping: no enums or parameter properties.
 */
import type { Target } from "./report.js";
import type * as RepeatModule from "./repeat.js";

type Mode = "full" | "quick" | "smoke";
type Bench = <T = any>(workload: string, params?: object) => Promise<T>;

const { medianBy } = (await import(new URL("./repeat.ts", import.meta.url).href)) as typeof RepeatModule;

/** The most recording may cost the drain: 5% (docs/benchmarks.md). */
export const RECORDING_COST_GOAL = 1.05;

const REPETITIONS: Record<Mode, number> = { full: 5, quick: 3, smoke: 1 };

export async function recordingWorkload(bench: Bench, mode: Mode, run: string, drainN: number): Promise<object> {
  const out: Record<string, unknown> = {};
  for (const concurrency of [1, 16]) {
    const reps: { on: any; off: any }[] = [];
    for (let rep = 0; rep < REPETITIONS[mode]; rep++) {
      const drain = (recording: "on" | "off") => bench("drain", { run: `${run}-rec-r${rep}`, n: drainN, concurrency, recording });
      // Alternating which goes first: a drain right after another may find the machine warmer or busier.
      const [first, second] = rep % 2 === 0 ? (["on", "off"] as const) : (["off", "on"] as const);
      const a = await drain(first);
      const b = await drain(second);
      reps.push(first === "on" ? { on: a, off: b } : { on: b, off: a });
    }
    out[`c${concurrency}`] = medianBy(reps, (r) => r.off.jobsPerSec / r.on.jobsPerSec);
  }
  return out;
}

const num = (value: unknown): number | null => (typeof value === "number" && Number.isFinite(value) ? value : null);

/** The recording targets: each drain's time with recording over its time without, at most `RECORDING_COST_GOAL`. */
export function recordingTargets(results: Record<string, any>): Target[] {
  return [1, 16].map((concurrency) => {
    const figure = results.recording?.[`c${concurrency}`];
    const measured = num(figure?.ratio);
    const rounded = measured === null ? null : Math.round(measured * 1000) / 1000;
    const ratios = Array.isArray(figure?.ratios) ? figure.ratios.map((x: number) => x.toFixed(3)).join(" / ") : "-";
    const rate = (side: "on" | "off") => num(figure?.[side]?.jobsPerSec)?.toFixed(0) ?? "-";
    return {
      name: `drain at concurrency ${concurrency}, recording on / off (its cost)`,
      measured: rounded,
      target: RECORDING_COST_GOAL,
      unit: "x",
      met: rounded !== null && rounded <= RECORDING_COST_GOAL,
      comparison: "<=",
      basis: `median of ${ratios}: ${rate("off")} / ${rate("on")} jobs/s off / on, ${figure?.on?.jobs ?? "?"} jobs each`,
    };
  });
}
