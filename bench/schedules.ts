/**
 * The schedules' benchmark, inside the bench worker: the alarm's cost per schedule fire with 10 and with
 * 1,000 schedules in one lane (it must stay flat), and real schedules firing in real time while the
 * enqueue and drain workloads run (bench/schedules-run.ts drives both from Node).
 *
 * The cost per fire is measured on a lane with a manual clock (a bench-only class): each alarm is
 * run in the object with the clock set to the next fire, and the schedules are staggered by 1 ms so
 * that every alarm fires exactly one of them, at either size. Timing note (workloads.ts): under local
 * workerd `Date.now()` moves inside synchronous code, which the in-object timing relies on.
 */
import { createLaneClient } from "../src/client/rpc.js";
import type { LaneClient } from "../src/client/types.js";
import { defineLane } from "../src/durable/lane.js";
import { ManualClock } from "../src/shared/clock.js";
import { unwrap } from "../src/shared/errors.js";
import { PULL_KIND } from "./lanes.js";
import type { BenchEnv } from "./workloads.js";
import { int, type Params } from "./workload-helpers.js";

/** Far in the future: the alarms this lane stores never fire on their own. */
const BASE = 4_000_000_000_000;
/** Every schedule's interval; longer than the 1 ms stagger of the largest size, so no two fires meet. */
const CYCLE_MS = 60_000;

/** SCHEDULE_LANE: the real lane, no executors, its clock the bench's to move. */
export class ScheduleBenchLane extends defineLane({ log: false }) {
  private readonly manual = new ManualClock(BASE);

  /** `n` interval schedules, 1 ms apart; then one fire outside any timing (it registers the lane and tells the belt). */
  async benchSchedules(n: number): Promise<number> {
    this.time.clock = this.manual;
    this.wake.know(undefined);
    for (let i = 0; i < n; i++) {
      this.manual.set(BASE + i);
      unwrap(this.schedules.put(`s${i}`, { everyMs: CYCLE_MS, job: { kind: PULL_KIND, payload: { i } } }));
    }
    await this.benchFire(1);
    await this.alarmWatch.settled();
    return n;
  }

  /** Runs the alarm at the next `k` fire instants, one fire each; the time they took in all. */
  async benchFire(k: number): Promise<{ fires: number; ms: number }> {
    let fires = 0;
    const t0 = Date.now();
    for (let i = 0; i < k; i++) {
      this.manual.set(this.schedules.nextFire()!);
      await this.alarm();
      fires++;
    }
    return { fires, ms: Date.now() - t0 };
  }
}

type ScheduleEnv = BenchEnv & { SCHEDULE_LANE: DurableObjectNamespace<ScheduleBenchLane> };

/** The lane whose schedules fire as load (`scheduleLoad`), through the RPC client. */
export const loadLane = (env: BenchEnv, name: string) => createLaneClient((env as ScheduleEnv).SCHEDULE_LANE).lane(name);

/** How many fires the load has made so far: its jobs wait, queued (no consumer takes them). */
export const firesSoFar = async (lane: LaneClient) => (await lane.info()).counts.queued;
const name = (params: Params, key: string) => String(params[key]);

export const scheduleWorkloads: Record<string, (env: BenchEnv, params: Params) => Promise<object>> = {
  /** The alarm's cost per fire at two sizes, in alternating rounds so that a drifting load weighs on both alike. */
  async scheduleAlarm(env, params) {
    const sizes = [int(params, "small", 10), int(params, "large", 1000)];
    const rounds = int(params, "rounds", 5);
    const firesPerRound = int(params, "fires", 200);
    const lanes = sizes.map((size) => (env as ScheduleEnv).SCHEDULE_LANE.getByName(`sched-alarm-${size}-${name(params, "run")}`));
    await Promise.all(lanes.map((lane, i) => lane.benchSchedules(sizes[i]!)));
    for (const lane of lanes) await lane.benchFire(firesPerRound); // warm-up, untimed: the first lane measured must not pay for it
    const totals = sizes.map(() => ({ fires: 0, ms: 0 }));
    for (let round = 0; round < rounds; round++) {
      // Each round in the other order, so that neither size is always measured first.
      for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
        const { fires, ms } = await lanes[i]!.benchFire(firesPerRound);
        totals[i]!.fires += fires;
        totals[i]!.ms += ms;
      }
    }
    const perFire = (t: { fires: number; ms: number }) => (t.fires > 0 ? Math.round(((t.ms * 1000) / t.fires) * 10) / 10 : null);
    const [small, large] = sizes.map((schedules, i) => ({ schedules, ...totals[i]!, usPerFire: perFire(totals[i]!) }));
    return { small, large, rounds };
  },

  /**
   * `schedules` interval schedules firing in real time (the system clock) in one lane, until
   * `scheduleStop`. Note: local workerd delivers no alarm while its thread is kept busy by
   * back-to-back RPCs (the enqueue workload held every alarm back for 20 s in a probe), so fires
   * happen in the gaps; `scheduleFired` around each phase says how many fell inside it.
   */
  async scheduleLoad(env, params) {
    const lane = loadLane(env, name(params, "lane"));
    const n = int(params, "schedules", 1000);
    const everyMs = int(params, "everyMs", 1000);
    const t0 = Date.now();
    for (let i = 0; i < n; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, n - i) }, (_, k) => lane.putSchedule(`s${i + k}`, { everyMs, job: { kind: PULL_KIND, payload: { k } } })));
    }
    return { schedules: n, everyMs, putMs: Date.now() - t0, startedAt: t0 };
  },

  /** How many fires the load has made so far. */
  async scheduleFired(env, params) {
    return { fired: await firesSoFar(loadLane(env, name(params, "lane"))), at: Date.now() };
  },

  /** Deletes the load's schedules; how many fires they made, and at what rate. */
  async scheduleStop(env, params) {
    const lane = loadLane(env, name(params, "lane"));
    const fired = await firesSoFar(lane);
    const seconds = (Date.now() - int(params, "startedAt", Date.now())) / 1000;
    const { schedules } = await lane.listSchedules();
    for (let i = 0; i < schedules.length; i += 50) await Promise.all(schedules.slice(i, i + 50).map((s) => lane.deleteSchedule(s.name)));
    return { fired, seconds, firesPerSec: seconds > 0 ? fired / seconds : null };
  },
};
