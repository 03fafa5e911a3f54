/**
 * The schedules' benchmark, from Node (run.ts calls it; bench/schedules.ts runs inside the worker): the
 * alarm's cost per fire at 1,000 schedules over 10, and the enqueue and drain targets measured again
 * while 1,000 schedules fire every second in another lane of the same runtime. Its targets are
 * report.ts's `scheduleTargets`, beside every other target.
 * Node runs this file by type stripping: no enums or parameter properties.
 */
type Mode = "full" | "quick" | "smoke";
type Bench = <T = any>(workload: string, params?: object) => Promise<T>;

const SIZES = {
  full: { small: 10, large: 1000, rounds: 5, fires: 400, load: 1000, drainN: 20_000 },
  quick: { small: 10, large: 1000, rounds: 5, fires: 200, load: 1000, drainN: 4000 },
  smoke: { small: 10, large: 100, rounds: 2, fires: 20, load: 50, drainN: 200 },
} satisfies Record<Mode, unknown>;

/** `enqueue`: run.ts's RPC enqueue measurement (its repetitions and median), told the lane whose schedules fire. */
export async function scheduleWorkload(bench: Bench, mode: Mode, run: string, enqueue: (loadLane: string) => Promise<object>): Promise<object> {
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
  const enqueueFigures = await during(() => enqueue(lane));
  const drain = await during(() => bench("drain", { run: `${run}-sched`, n: sizes.drainN, concurrency: 16 }));
  const stop = await bench("scheduleStop", { lane, startedAt: load.startedAt });
  return { alarm, load: { ...load, ...stop }, enqueue: enqueueFigures, drain, sizes };
}
