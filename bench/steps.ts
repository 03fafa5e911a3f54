/**
 * Durable steps in the bench: one in-process job running 1,000 `ctx.step`s, against raw
 * single-row UPSERTs of as many rows in a lane object (a table shaped like `checkpoints`), in
 * alternating rounds; and jobs that record one checkpoint each, for the drain (`/bench/drain` with
 * `steps`). Both loops are timed inside the object (local workerd's clock moves there: see the
 * `clock` workload); the steps' end to end time, enqueue to settled, is reported too.
 */
import { createLaneClient } from "../src/client/rpc.js";
import type { ExecutorContext } from "../src/durable/attempts/executors.js";
import type { BenchEnv } from "./workloads.js";
import { rate, sleep } from "./workload-helpers.js";

/**
 * The bench lane's no-op executor (kind `bench.noop`): answers when it started; with `payload.steps`,
 * it first runs that many `ctx.step`s, each recording a small number, and answers how long they took.
 */
export function noopOrSteps(payload: { steps?: unknown } | null, ctx: ExecutorContext): object {
  const startedAt = Date.now();
  // On the same clock as the caller's `performance.timeOrigin + performance.now()`: fractions of a ms.
  const startedAtPrecise = performance.timeOrigin + performance.now();
  const steps = typeof payload?.steps === "number" ? payload.steps : 0;
  return steps > 0 ? runSteps(steps, ctx.step, startedAt) : { startedAt, startedAtPrecise };
}

async function runSteps(steps: number, step: ExecutorContext["step"], startedAt: number): Promise<object> {
  for (let i = 0; i < steps; i++) await step(`s${i}`, () => i);
  return { startedAt, ms: Date.now() - startedAt };
}

const UPSERT_TABLE = `CREATE TABLE IF NOT EXISTS bench_upserts (job_seq INTEGER NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL,
  generation INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (job_seq, name)) WITHOUT ROWID`;
const UPSERT = `INSERT INTO bench_upserts (job_seq, name, value, generation, updated_at) VALUES (1, ?, ?, 1, ?)
  ON CONFLICT (job_seq, name) DO UPDATE SET value = excluded.value, generation = excluded.generation, updated_at = excluded.updated_at`;

/** Raw single-row UPSERTs, `n` statements of new names: milliseconds inside the object. */
export function rawUpserts(sql: SqlStorage, n: number, prefix: string): number {
  sql.exec(UPSERT_TABLE);
  const t0 = Date.now();
  for (let i = 0; i < n; i++) sql.exec(UPSERT, `${prefix}-s${i}`, String(i), t0);
  return Date.now() - t0;
}


export const stepWorkloads: Record<string, (env: BenchEnv, params: Record<string, unknown>) => Promise<object>> = {
  /** One job of `steps` steps (of the lane's no-op kind, `kind`) per round, alternating with as many raw UPSERTs, `rounds` times. */
  async steps(env, params) {
    const kind = String(params.kind);
    const steps = typeof params.steps === "number" ? params.steps : 1000;
    const rounds = typeof params.rounds === "number" ? params.rounds : 5;
    const run = String(params.run);
    const lane = createLaneClient(env.LANE).lane(`steps-${run}`);
    const probe = env.PLAIN_LANE.getByName(`steps-upsert-${run}`);
    await lane.info();
    await probe.benchPing();
    const totals = { steps: { ops: 0, ms: 0, endToEndMs: 0 }, upsert: { ops: 0, ms: 0 } };
    for (let round = 0; round < rounds; round++) {
      const t0 = Date.now();
      const { job } = await lane.enqueue({ kind, payload: { steps } });
      let done = await lane.get(job.id);
      while (done.state !== "settled") {
        await sleep(2);
        done = await lane.get(job.id);
      }
      if (done.outcome !== "completed") throw new Error(`the steps job ended ${done.outcome}: ${done.error}`);
      totals.steps.endToEndMs += Date.now() - t0;
      totals.steps.ops += steps;
      totals.steps.ms += (done.result as { ms: number }).ms;
      totals.upsert.ops += steps;
      totals.upsert.ms += await probe.benchSqlUpsert(steps, `r${round}`);
    }
    return {
      steps: { ...totals.steps, stepsPerSec: rate(totals.steps.ops, totals.steps.ms), endToEndStepsPerSec: rate(totals.steps.ops, totals.steps.endToEndMs) },
      upsert: { ...totals.upsert, opsPerSec: rate(totals.upsert.ops, totals.upsert.ms) },
      rounds,
    };
  },
};
