/**
 * A lane's metrics (docs/api.md "Metrics"): its live exposition, parsed with a Prometheus text
 * parser, equals its info and stats; the histograms count every start's wait and every attempt's
 * run, bucket by bucket; its reports to the registry are coalesced to at most one a second, the
 * waiting one a term of the lane's one wake, and an idle lane sends none.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { REGISTRY_NAME } from "../../../src/durable/env.js";
import { escapeLabelValue, exposition, HISTOGRAM_BOUNDS_MS, laneFragments, type LaneReport } from "../../../src/durable/metrics/exposition.js";
import { ManualClock } from "../../../src/shared/clock.js";
import { alarmAt, claimOne, enqueue, fireAlarm, inject, retentionWakeOf, sql, T0, TestEntropy, value, wake, type LaneStub } from "../../helpers/lane.js";
import { gate, waitForTransition } from "../../helpers/executors.js";
import { histogram, histogramSeries, parseExposition, samplesOf, type Exposition } from "../../helpers/prometheus.js";
import { recordingOff, type TestableLane } from "../../helpers/test-worker.js";

const registry = () => env.REGISTRY.getByName(REGISTRY_NAME);

async function setup(name = `metrics-${crypto.randomUUID()}`) {
  const stub = env.METRICS_LANE.getByName(name) as unknown as LaneStub;
  const clock = new ManualClock(T0);
  await inject(stub, clock, new TestEntropy());
  return { name, stub, clock };
}

/** Waits for the lane's report in flight, if any; answers how many reports this instance has sent. */
const settled = (stub: LaneStub) => runInDurableObject(stub, (lane) => (lane as TestableLane).metricsSettled());

/** The samples of a metric for one lane, keyed by their other label (state, event). */
function byLabel(exposition: Exposition, name: string, lane: string, label: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samplesOf(exposition, name, { lane })) out[s.labels[label] ?? ""] = s.value;
  return out;
}

const le = (ms: number) => String(ms / 1000);

describe("a lane's metrics", () => {
  it("are its counts, stats and oldest due age, and histograms of each wait and run, in the text format", async () => {
    const { name, stub, clock } = await setup();
    await enqueue(stub, { id: "a" });
    await enqueue(stub, { id: "b", runAt: T0 + 2000 });
    await enqueue(stub, { id: "c" });
    await enqueue(stub, { id: "d", priority: -1 }); // claimed by no one: queued, due since T0
    clock.advance(500);
    const a = await claimOne(stub); // waited 500
    expect(a.id).toBe("a");
    clock.advance(300);
    value(await stub.complete("a", { token: a.lease.token })); // ran 300: completed
    const c = await claimOne(stub); // waited 800
    expect(c.id).toBe("c");
    clock.advance(100);
    value(await stub.fail("c", { token: c.lease.token, error: "no", retry: false })); // ran 100: failed
    clock.set(T0 + 2600);
    const b = await claimOne(stub); // due at T0+2000: waited 600
    expect(b.id).toBe("b");
    clock.advance(50);
    value(await stub.release("b", { token: b.lease.token })); // ran 50: released, queued again at T0+2650
    clock.advance(1000);
    const again = await claimOne(stub); // waited 1000
    expect(again.id).toBe("b");

    const exposition = parseExposition(value(await stub.metrics()));
    expect(exposition.families.map((f) => [f.name, f.type])).toEqual([
      ["switchyard_jobs", "GAUGE"],
      ["switchyard_jobs_total", "COUNTER"],
      ["switchyard_oldest_due_age_seconds", "GAUGE"],
      ["switchyard_job_wait_seconds", "HISTOGRAM"],
      ["switchyard_job_run_seconds", "HISTOGRAM"],
    ]);
    for (const f of exposition.families) expect(f.help.length, f.name).toBeGreaterThan(0);
    const info = value(await stub.info());
    expect(byLabel(exposition, "switchyard_jobs", name, "state")).toEqual(info.counts);
    expect(byLabel(exposition, "switchyard_jobs_total", name, "event")).toEqual(info.stats);
    expect(info.oldestDueAt).toBe(T0);
    expect(samplesOf(exposition, "switchyard_oldest_due_age_seconds")).toEqual([{ name: "switchyard_oldest_due_age_seconds", labels: { lane: name }, value: (clock.now() - T0) / 1000 }]);

    expect(histogramSeries(exposition, "switchyard_job_wait_seconds")).toEqual([{ lane: name }]);
    const wait = histogram(exposition, "switchyard_job_wait_seconds", { lane: name });
    expect(wait.count).toBe(info.stats.claimed);
    expect(wait.sum).toBeCloseTo((500 + 800 + 600 + 1000) / 1000, 6);
    expect(new Set(Object.keys(wait.buckets))).toEqual(new Set([...HISTOGRAM_BOUNDS_MS.map(le), "+Inf"]));
    expect(wait.buckets).toMatchObject({ [le(250)]: 0, [le(500)]: 1, [le(1000)]: 4, "+Inf": 4 });

    const runs = "switchyard_job_run_seconds";
    expect(histogramSeries(exposition, runs)).toEqual(["completed", "failed", "released"].map((outcome) => ({ lane: name, outcome })));
    expect(histogram(exposition, runs, { lane: name, outcome: "completed" })).toMatchObject({ count: 1, sum: 0.3, buckets: { [le(250)]: 0, [le(500)]: 1 } });
    expect(histogram(exposition, runs, { lane: name, outcome: "failed" })).toMatchObject({ count: 1, sum: 0.1, buckets: { [le(50)]: 0, [le(100)]: 1 } });
    expect(histogram(exposition, runs, { lane: name, outcome: "released" })).toMatchObject({ count: 1, sum: 0.05, buckets: { [le(25)]: 0, [le(50)]: 1 } });
  });

  it("count a job started in its enqueue's turn: no wait, its run completed", async () => {
    const { name, stub } = await setup();
    await enqueue(stub, { id: "e", kind: "demo.echo", payload: 1 });
    await runInDurableObject(stub, () => new Promise((resolve) => setTimeout(resolve, 0)));
    expect(value(await stub.getJob("e")).state).toBe("settled");
    const exposition = parseExposition(value(await stub.metrics()));
    expect(histogram(exposition, "switchyard_job_wait_seconds", { lane: name })).toMatchObject({ count: 1, sum: 0, buckets: { [le(5)]: 1 } });
    expect(histogram(exposition, "switchyard_job_run_seconds", { lane: name, outcome: "completed" })).toMatchObject({ count: 1, sum: 0 });
  });

  it("count a retry and a snooze under their own outcomes", async () => {
    const { name, stub, clock } = await setup();
    await enqueue(stub, { id: "r", maxAttempts: 2 });
    const first = await claimOne(stub);
    clock.advance(20);
    value(await stub.fail("r", { token: first.lease.token, error: "again" })); // retried after backoff
    clock.advance(60_000);
    const second = await claimOne(stub);
    clock.advance(10);
    value(await stub.snooze("r", { token: second.lease.token, delayMs: 1000 }));
    const exposition = parseExposition(value(await stub.metrics()));
    const runs = "switchyard_job_run_seconds";
    expect(histogramSeries(exposition, runs).map((l) => l.outcome)).toEqual(["retried", "snoozed"]);
    expect(histogram(exposition, runs, { lane: name, outcome: "retried" })).toMatchObject({ count: 1, sum: 0.02 });
    expect(histogram(exposition, runs, { lane: name, outcome: "snoozed" })).toMatchObject({ count: 1, sum: 0.01 });
    expect(histogram(exposition, "switchyard_job_wait_seconds", { lane: name })).toMatchObject({ count: 2 });
  });

  it("are kept by the store, with no trigger, across a restart; a value past every bound counts in +Inf alone", async () => {
    const { name, stub, clock } = await setup();
    await evictDurableObject(stub);
    await inject(stub, clock);
    await enqueue(stub, { id: "slow" });
    expect(await sql(stub, `SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'jobs_histogram_%'`)).toEqual([]);
    clock.advance(3_600_001); // one ms past the last bound
    const job = await claimOne(stub);
    clock.advance(25); // at a bound
    value(await stub.complete("slow", { token: job.lease.token }));
    const exposition = parseExposition(value(await stub.metrics()));
    const last = le(HISTOGRAM_BOUNDS_MS.at(-1)!);
    expect(histogram(exposition, "switchyard_job_wait_seconds", { lane: name })).toMatchObject({ count: 1, sum: 3600.001, buckets: { [last]: 0, "+Inf": 1 } });
    expect(histogram(exposition, "switchyard_job_run_seconds", { lane: name, outcome: "completed" })).toMatchObject({ count: 1, sum: 0.025, buckets: { [le(10)]: 0, [le(25)]: 1, [last]: 1, "+Inf": 1 } });
  });

  it("escape label values: backslash, double quote and newline come back as they were", () => {
    const lane = 'we"ird\\lane\nname';
    expect(escapeLabelValue(lane)).toBe('we\\"ird\\\\lane\\nname');
    const report: LaneReport = {
      counts: { blocked: 0, queued: 1, running: 0, completing: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0 },
      stats: { enqueued: 1, claimed: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0, retried: 0, recovered: 0, lost: 0, expired: 0, snoozed: 0, debounced: 0 },
      earliestRunAt: 1000,
      histograms: [{ name: "run", outcome: 'o"dd', count: 1, sumMs: 3, buckets: HISTOGRAM_BOUNDS_MS.map(() => 1) }],
    };
    const parsed = parseExposition(exposition([{ lane, fragments: laneFragments(lane, report), earliestRunAt: 1000 }], 3500));
    expect(samplesOf(parsed, "switchyard_jobs", { state: "queued" })).toEqual([{ name: "switchyard_jobs", labels: { lane, state: "queued" }, value: 1 }]);
    expect(samplesOf(parsed, "switchyard_oldest_due_age_seconds")).toEqual([{ name: "switchyard_oldest_due_age_seconds", labels: { lane }, value: 2.5 }]);
    expect(histogramSeries(parsed, "switchyard_job_run_seconds")).toEqual([{ lane, outcome: 'o"dd' }]);
    expect(histogram(parsed, "switchyard_job_run_seconds", { lane, outcome: 'o"dd' })).toMatchObject({ count: 1, sum: 0.003 });
  });
});

describe("a lane's reports to the registry", () => {
  it("go at most once a second under a burst: the first at once, the last when the wake's term comes", async () => {
    const { name, stub, clock } = await setup();
    const before = await registry().served(name);
    for (let i = 0; i < 50; i++) await enqueue(stub, { id: `j${i}` });
    expect(await settled(stub)).toBe(1);
    expect((await registry().served(name)).laneReports - before.laneReports).toBe(1);
    // The 49 enqueues after the first wait for the report's term: the lane's only wake (its jobs wait for pull consumers).
    expect(await wake(stub)).toBe(T0 + 1000);
    clock.advance(999);
    for (let i = 50; i < 60; i++) await enqueue(stub, { id: `j${i}` });
    expect(await settled(stub)).toBe(1);
    clock.advance(1);
    expect(await fireAlarm(stub)).toBe(true);
    expect(await settled(stub)).toBe(2);
    expect((await registry().served(name)).laneReports - before.laneReports).toBe(2);
    // The registry holds the lane's report as it is now: its rendering equals the lane's own.
    expect(await registry().metrics(clock.now(), [name])).toBe(value(await stub.metrics()));
    expect(samplesOf(parseExposition(await registry().metrics(clock.now(), [name])), "switchyard_jobs", { state: "queued" })[0]?.value).toBe(60);
  });

  it("hear of single enqueues of pull-only jobs, which move no term of the wake, the lane knowing its stored alarm as in production", async () => {
    const { name, stub, clock } = await setup();
    await runInDurableObject(stub, (lane) => (lane as TestableLane).knowStoredAlarm());
    for (let i = 0; i < 3; i++) await enqueue(stub, { id: `p${i}` });
    expect(await settled(stub), "the first enqueue's report goes at once").toBe(1);
    expect(await wake(stub), "the others wait for the report's term").toBe(T0 + 1000);
    clock.advance(1000);
    expect(await fireAlarm(stub)).toBe(true);
    expect(await settled(stub)).toBe(2);
    expect(await registry().metrics(clock.now(), [name])).toBe(value(await stub.metrics()));
    expect(samplesOf(parseExposition(await registry().metrics(clock.now(), [name])), "switchyard_jobs", { state: "queued" })[0]?.value).toBe(3);
    // A report sent, the next quiet enqueue asks for a flush again: its report waits for its term.
    clock.advance(5000);
    await enqueue(stub, { id: "p3" });
    expect(await settled(stub)).toBe(3);
    expect(await wake(stub), "nothing waits: the report went at once").toBeNull();
    expect(samplesOf(parseExposition(await registry().metrics(clock.now(), [name])), "switchyard_jobs", { state: "queued" })[0]?.value).toBe(4);
  });

  it("hear of jobs started in their enqueue's turn that move no term of the wake", async () => {
    const { name, stub, clock } = await setup();
    await runInDurableObject(stub, (lane) => (lane as TestableLane).knowStoredAlarm());
    const a = gate();
    const b = gate();
    await enqueue(stub, { id: "a", kind: "test.gate", payload: { gate: a.key } }); // its lease is the alarm: reported at once
    const heldA = await a.started();
    clock.advance(10);
    await enqueue(stub, { id: "b", kind: "test.gate", payload: { gate: b.key } }); // its lease expires later: the alarm stays
    const heldB = await b.started();
    expect(await settled(stub)).toBe(1);
    expect(await wake(stub), "the report's term").toBe(T0 + 1000);
    clock.advance(990);
    expect(await fireAlarm(stub)).toBe(true);
    expect(await settled(stub)).toBe(2);
    expect(samplesOf(parseExposition(await registry().metrics(clock.now(), [name])), "switchyard_jobs", { state: "running" })[0]?.value).toBe(2);
    await runInDurableObject(stub, () => heldA.open());
    await runInDurableObject(stub, () => heldB.open());
    await runInDurableObject(stub, () => waitForTransition("b", (e) => e.lane === name && e.to === "settled"));
  });

  it("never break the flush: a report that cannot be read waits a backoff, and the alarm is armed all the same", async () => {
    const { name, stub, clock } = await setup();
    await sql(stub, `ALTER TABLE job_histograms RENAME TO job_histograms_away`); // the report's read throws
    await enqueue(stub, { id: "later", runAt: T0 + 500 });
    expect(await alarmAt(stub), "the flush re-armed for the job").toBe(T0 + 500);
    expect(await settled(stub)).toBe(0);
    await sql(stub, `ALTER TABLE job_histograms_away RENAME TO job_histograms`);
    clock.advance(500);
    expect(await fireAlarm(stub)).toBe(true);
    expect(await settled(stub), "the failed try backs off two seconds").toBe(0);
    expect(await wake(stub)).toBe(T0 + 2000);
    clock.set(T0 + 2000);
    expect(await fireAlarm(stub)).toBe(true);
    expect(await settled(stub)).toBe(1);
    expect(samplesOf(parseExposition(await registry().metrics(clock.now(), [name])), "switchyard_jobs", { state: "queued" })[0]?.value).toBe(1);
  });

  it("arm the waiting report's term after an in-process completion that only frees a slot", async () => {
    const { name, stub, clock } = await setup();
    const g = gate();
    // A settled job first: retention has a term, so a freed slot alone would keep the stored alarm.
    await enqueue(stub, { id: "done", kind: "demo.echo", payload: 1 }); // reported at once
    await runInDurableObject(stub, () => waitForTransition("done", (e) => e.lane === name && e.to === "settled"));
    await enqueue(stub, { id: "held", kind: "test.gate", payload: { gate: g.key } }); // waits for the report's term
    const held = await g.started();
    clock.advance(1000);
    expect(await fireAlarm(stub)).toBe(true);
    expect(await settled(stub)).toBe(2);
    // Nothing waits now: the alarm is the lease's. The completion frees a slot (no re-arm unless a term appears).
    clock.advance(10);
    await runInDurableObject(stub, () => held.open());
    await runInDurableObject(stub, () => waitForTransition("held", (e) => e.lane === name && e.to === "settled"));
    expect(await wake(stub), "the report's term").toBe(clock.now() - 10 + 1000);
    clock.advance(990);
    expect(await fireAlarm(stub)).toBe(true);
    expect(await settled(stub)).toBe(3);
    expect(samplesOf(parseExposition(await registry().metrics(clock.now(), [name])), "switchyard_jobs", { state: "completed" })[0]?.value).toBe(2);
  });

  it("stop when the lane is idle: nothing changed, nothing sent, no term of the wake", async () => {
    const { name, stub, clock } = await setup();
    await enqueue(stub, { id: "x" });
    await enqueue(stub, { id: "y" });
    clock.advance(1000);
    expect(await fireAlarm(stub)).toBe(true);
    expect(await settled(stub)).toBe(2);
    const before = await registry().served(name);
    expect(await wake(stub)).toBeNull();
    for (let i = 0; i < 5; i++) {
      clock.advance(10_000);
      value(await stub.info());
      value(await stub.checkWake());
    }
    expect(await settled(stub)).toBe(2);
    expect(await registry().served(name)).toEqual(before);
    expect(await wake(stub)).toBeNull();
  });

  it("are withdrawn from the registry, once, by a lane that starts with its reports off", async () => {
    const { name, stub, clock } = await setup();
    const reported = async () => (await sql<{ r: number }>(stub, `SELECT metrics_reported AS r FROM lane`))[0]?.r;
    expect(await reported()).toBe(0);
    await enqueue(stub, { id: "w" });
    expect(await settled(stub)).toBe(1);
    expect(await reported(), "remembered before the first report").toBe(1);
    expect(await registry().metrics(clock.now(), [name])).toContain(name);
    // A deploy turns recording off: the lane's next start withdraws its report.
    recordingOff.add(name);
    try {
      await evictDurableObject(stub);
      await inject(stub, clock);
      await settled(stub);
      expect(await registry().metrics(clock.now(), [name]), "no longer served as current").not.toContain(name);
      expect(await reported()).toBe(0);
      // Once: a report the registry holds now (as if from elsewhere) stays through the next start.
      await registry().report(name, { counts: value(await stub.info()).counts, stats: value(await stub.info()).stats, earliestRunAt: null, histograms: [] });
      await evictDurableObject(stub);
      await inject(stub, clock);
      expect(await settled(stub)).toBe(0);
      expect(await registry().metrics(clock.now(), [name])).toContain(name);
    } finally {
      recordingOff.delete(name);
    }
    // Recording on again: the lane reports at its start.
    await evictDurableObject(stub);
    await inject(stub, clock);
    expect(await settled(stub)).toBe(1);
    expect(await reported()).toBe(1);
  });

  it("send nothing from a lane whose recording is off, which observes no wait or run either", async () => {
    const name = `quiet-${crypto.randomUUID()}`;
    const stub = env.QUIET_LANE.getByName(name) as unknown as LaneStub;
    await inject(stub, new ManualClock(T0));
    for (let i = 0; i < 3; i++) await enqueue(stub, { id: `q${i}` });
    const job = await claimOne(stub);
    value(await stub.complete(job.id, { token: job.lease.token }));
    const live = parseExposition(value(await stub.metrics()));
    expect(samplesOf(live, "switchyard_jobs_total", { event: "completed" }).map((s) => s.value)).toEqual([1]);
    expect(histogramSeries(live, "switchyard_job_wait_seconds")).toEqual([]);
    expect(histogramSeries(live, "switchyard_job_run_seconds")).toEqual([]);
    expect(await settled(stub)).toBe(0);
    expect((await registry().served(name)).laneReports).toBe(0);
    expect(await wake(stub), "no report's term: the retention of the completed job alone").toBe(retentionWakeOf(T0, "completed"));
    expect(await registry().metrics(T0, [name])).not.toContain(name);
  });
});
