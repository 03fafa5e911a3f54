/**
 * Fixtures for lane tests: a fresh pull-only lane (`PLAIN_LANE`, no in-process executors) with a
 * manual clock and deterministic entropy, plus readers of its rows and alarm.
 */
import { env } from "cloudflare:workers";
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { expect } from "vitest";
import type { Lane } from "../../src/durable/lane.js";
import type { JobRow } from "../../src/durable/store/job-row.js";
import { ManualClock, type Clock, type Entropy } from "../../src/shared/clock.js";
import { DEFAULT_COMPLETED_RETENTION_MS, DEFAULT_FAILED_RETENTION_MS, RETENTION_SLACK_MS } from "../../src/shared/defaults.js";
import type { ErrorBody, ErrorCode, Result } from "../../src/shared/errors.js";
import type { ClaimedJob, Outcome, PulledJob } from "../../src/shared/job.js";
import type { TestableLane } from "./test-worker.js";

/** Far in the future, so that an alarm set by a test never fires on its own. */
export const T0 = 4_000_000_000_000;

export type LaneStub = DurableObjectStub<Lane>;

/** Ids `id-1`, `id-2`…, tokens `tok-1`, `tok-2`…, and `random()` answering `randoms` in turn (then 0.5). */
export class TestEntropy implements Entropy {
  private ids = 0;
  private tokens = 0;
  constructor(public randoms: number[] = []) {}
  id(): string {
    return `id-${++this.ids}`;
  }
  token(): string {
    return `tok-${++this.tokens}`;
  }
  random(): number {
    return this.randoms.shift() ?? 0.5;
  }
}

export interface LaneFixture {
  name: string;
  stub: LaneStub;
  clock: ManualClock;
  entropy: TestEntropy;
}

/** A fresh lane of its own name, with a manual clock at `T0` and `TestEntropy`. */
export async function setup(options: { randoms?: number[] } = {}): Promise<LaneFixture> {
  const name = crypto.randomUUID();
  const stub = env.PLAIN_LANE.getByName(name);
  const clock = new ManualClock(T0);
  const entropy = new TestEntropy(options.randoms);
  await inject(stub, clock, entropy);
  return { name, stub, clock, entropy };
}

export async function inject(stub: DurableObjectStub<Lane>, clock: Clock, entropy?: Entropy): Promise<void> {
  await runInDurableObject(stub, (lane: Lane) => (lane as TestableLane).useClock(clock, entropy));
}

/** Evicts the object (its memory is gone; storage stays), then injects the same clock and entropy again. */
export async function evict(fixture: LaneFixture): Promise<void> {
  await evictDurableObject(fixture.stub);
  await inject(fixture.stub, fixture.clock, fixture.entropy);
}

/** The value of an answer that must succeed (fails the test with the refusal otherwise). */
export function value<T>(result: Result<T>): T {
  if (!result.ok) expect.fail(`expected success, got ${result.error.code}: ${result.error.message}`);
  return result.value;
}

/** The refusal of an answer that must fail with `code`. */
export function refusal(result: Result<unknown>, code: ErrorCode): ErrorBody {
  if (result.ok) expect.fail(`expected ${code}, got success: ${JSON.stringify(result.value)}`);
  expect(result.error.code, result.error.message).toBe(code);
  return result.error;
}

/** Enqueues one job that must be accepted; returns its id. */
export async function enqueue(stub: LaneStub, request: Record<string, unknown>): Promise<string> {
  return value(await stub.enqueue({ kind: "k", ...request })).job.id;
}

/** Claims with `request`; returns the claimed jobs. */
export async function claim(stub: LaneStub, request: Record<string, unknown> = {}): Promise<PulledJob[]> {
  return value(await stub.claim({ max: 100, ...request })).jobs;
}

/** Claims exactly one job and returns it. */
export async function claimOne(stub: LaneStub, request: Record<string, unknown> = {}): Promise<PulledJob> {
  const jobs = value(await stub.claim({ ...request, max: 1 })).jobs;
  expect(jobs).toHaveLength(1);
  return jobs[0]!;
}

/** Every row of the jobs table, in enqueue order. */
export async function rows(stub: LaneStub): Promise<JobRow[]> {
  return runInDurableObject(stub, (_lane, state) =>
    state.storage.sql.exec<JobRow>(`SELECT * FROM jobs ORDER BY seq`).toArray(),
  );
}

/** The row of one job (undefined: no such job). */
export async function row(stub: LaneStub, id: string): Promise<JobRow | undefined> {
  return runInDurableObject(stub, (_lane, state) =>
    state.storage.sql.exec<JobRow>(`SELECT * FROM jobs WHERE id = ?`, id).toArray()[0],
  );
}

/** The alarm as storage holds it. */
export async function alarmAt(stub: LaneStub): Promise<number | null> {
  return runInDurableObject(stub, (_lane, state) => state.storage.getAlarm());
}

/**
 * `info().nextWakeAt`, the computed wake, after checking the wake's invariant: when there is a wake,
 * the stored alarm exists and is no later than it (an earlier alarm is harmless: it finds nothing).
 */
export async function wake(stub: LaneStub): Promise<number | null> {
  const computed = value(await stub.info()).nextWakeAt;
  const stored = await stub.storedAlarm();
  if (computed !== null) {
    expect(stored, "a wake with no alarm stored").not.toBeNull();
    expect(stored!, "an alarm stored later than the wake").toBeLessThanOrEqual(computed);
  }
  return computed;
}

/** Runs the alarm if one is set; true if it ran. */
export function fireAlarm(stub: LaneStub): Promise<boolean> {
  return runDurableObjectAlarm(stub);
}

/** Runs raw SQL inside the lane (for CHECK and migration tests). */
export async function sql<T extends Record<string, SqlStorageValue>>(
  stub: LaneStub,
  query: string,
  ...bindings: unknown[]
): Promise<T[]> {
  return runInDurableObject(stub, (_lane, state) => state.storage.sql.exec<T>(query, ...bindings).toArray());
}

/**
 * Drops every table of a lane's database (their indexes and triggers go with them), so that `migrate`
 * can rebuild it at an older version, as an older release left it. The platform's own tables stay.
 */
export function dropTables(storage: DurableObjectStorage): void {
  const tables = storage.sql
    .exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'`)
    .toArray();
  for (const { name } of tables) storage.sql.exec(`DROP TABLE "${name}"`);
}

/** The wake a job settled at `settledAt` with `outcome` sets under the default retention: its horizon, plus the slack. */
export function retentionWakeOf(settledAt: number, outcome: Outcome): number {
  return settledAt + (outcome === "completed" ? DEFAULT_COMPLETED_RETENTION_MS : DEFAULT_FAILED_RETENTION_MS) + RETENTION_SLACK_MS;
}
