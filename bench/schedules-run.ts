/**
 * Issue 14's benchmark, from Node (run.ts calls it; bench/schedules.ts runs inside the worker): the
 * alarm's cost per fire at 1,000 schedules over 10, and the enqueue and drain targets measured again
 * while 1,000 schedules fire every second in another lane of the same runtime.
 * Node runs this file by type stripping: no enums or parameter properties.
 */
import type { Target } from "./report.js";

type Mode = "full" | "quick" | "smoke";
type Bench = <T = any>(workload: string, params?: object) => Promise<T>;

const SIZES = {
  full: { small: 10, large: 1000, rounds: 5, fires: 400, load: 1000, enqueueN: 2000, drainN: 20_000 },
  quick: { small: 10, large: 1000, rounds: 5, fires: 200, load: 1000, enqueueN: 1000, drainN: 4000 },
  smoke: { small: 10, large: 100, rounds: 2, fires: 20, load: 50, enqueueN: 50, drainN: 200 },
} satisfies Record<Mode, unknown>;

export async function scheduleWorkload(bench: Bench, mode: Mode, run: string): Promise<object> {
  const sizes = SIZES[mode];
  const alarm = await bench("scheduleAlarm", { small: sizes.small, large: sizes.large, rounds: sizes.rounds, fires: sizes.fires });
  const lane = `sched-load-${run}`;
  const load = await bench<{ startedAt: number }>("scheduleLoad", { lane, schedules: sizes.load, everyMs: 1000 });
  /** A phase, with the fires that happened during it (local workerd holds alarms back while it is busy). */
  const during = async <T extends object>(phase: () => Promise<T>) => {
    const before = await bench<{ fired: number; at: number }>("scheduleFired", { lane });
    const figures = await phase();
    const after = await bench<{ fired: number; at: number }>("scheduleFired", { lane });
    return { ...figures, fires: after.fired - before.fired, firesPerSec: ((after.fired - before.fired) * 1000) / Math.max(1, after.at - before.at) };
  };
  // Lanes of their own (another run name): the enqueue and drain workloads' lanes are used already.
  const enqueue = await during(() => bench("enqueueRpc", { run: `${run}-sched`, n: sizes.enqueueN, concurrency: 1 }));
  const drain = await during(() => bench("drain", { run: `${run}-sched`, n: sizes.drainN, concurrency: 16 }));
  const stop = await bench("scheduleStop", { lane, startedAt: load.startedAt });
  return { alarm, load: { ...load, ...stop }, enqueue, drain, sizes };
}

const num = (value: unknown): number | null => (typeof value === "number" && Number.isFinite(value) ? value : null);
const ratio = (a: unknown, b: unknown): number | null => {
  const x = num(a);
  const y = num(b);
  return x === null || y === null || y === 0 ? null : x / y;
};

function target(name: string, measured: number | null, comparison: ">=" | "<=", goal: number, unit: string, basis: string): Target {
  const rounded = measured === null ? null : Math.round(measured * 1000) / 1000;
  const met = rounded !== null && (comparison === ">=" ? rounded >= goal : rounded <= goal);
  return { name, measured: rounded, target: goal, unit, met, comparison, basis };
}

export function scheduleTargets(r: Record<string, any>): Target[] {
  const s = r.schedules;
  const fires = (phase: any) => `${phase?.fires ?? "?"} fires of ${s?.load?.schedules ?? "?"} schedules meanwhile (${num(phase?.firesPerSec)?.toFixed(0) ?? "-"}/s)`;
  return [
    target(`alarm cost per fire, ${s?.alarm?.large?.schedules ?? "?"} vs ${s?.alarm?.small?.schedules ?? "?"} schedules`,
      ratio(s?.alarm?.large?.usPerFire, s?.alarm?.small?.usPerFire), "<=", 1.5, "x",
      `${s?.alarm?.large?.usPerFire ?? "-"} vs ${s?.alarm?.small?.usPerFire ?? "-"} µs per fire`),
    target("enqueue via RPC client / one-row-writing RPC, while schedules fire", ratio(s?.enqueue?.enqueue?.opsPerSec, s?.enqueue?.write?.opsPerSec), ">=", 0.9, "ratio", fires(s?.enqueue)),
    target("drain at concurrency 16 / raw claim, while schedules fire", ratio(s?.drain?.jobsPerSec, r.sqlite?.claim?.opsPerSec), ">=", 0.25, "ratio", fires(s?.drain)),
  ];
}
