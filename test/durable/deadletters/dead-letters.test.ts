/**
 * Dead letters (docs/api.md "Dead letters"): a job of a lane with a `deadLetter` setting that settles
 * failed or interrupted is copied into the dead-letter lane named at that moment, once, through the
 * lane's outbox (written in the settling transaction, delivered by the alarm, across restarts).
 */
import { expect, it, vi } from "vitest";
import { MAX_DEAD_LETTER_ID_CHARS } from "../../../src/shared/dead-letters.js";
import { lanes } from "../../helpers/dependency-lanes.js";
import { claimOne, fireAlarm, sql, value, wake, type LaneStub } from "../../helpers/lane.js";
import { restartLane } from "../../helpers/restart.js";
import { PAYLOADS_LANE_PREFIX } from "../../helpers/test-worker.js";

type Copy = { lane: string; id: string; kind: string; payload: unknown; outcome: string; error: string | null; errors: unknown[]; attempts: number; settledAt: number };

async function setupLanes(n = 2, prefix = "dl") {
  const { clock, lanes: all } = await lanes(n, prefix);
  const [source, target] = all as [{ name: string; stub: LaneStub }, { name: string; stub: LaneStub }];
  value(await source.stub.configure({ deadLetter: { lane: target.name } }));
  return { clock, source, target, all };
}

const owed = (stub: LaneStub) => sql<{ n: number }>(stub, `SELECT COUNT(*) AS n FROM dead_letter_outbox`).then((r) => r[0]!.n);

/** Fires the source's alarm and waits until its outbox is empty (each copy acknowledged). */
async function deliver(stub: LaneStub): Promise<void> {
  await fireAlarm(stub);
  await expect.poll(() => owed(stub)).toBe(0);
}

/** Claims job `id` (its kind `k-<id>` unless said) and fails it for good with `error`. */
async function failPulled(stub: LaneStub, id: string, error: string, kind = `k-${id}`): Promise<void> {
  const claimed = await claimOne(stub, { kinds: [kind] });
  value(await stub.fail(id, { token: claimed.lease.token, error, retry: false }));
}

async function copyIn(stub: LaneStub, id: string) {
  const job = value(await stub.getJob(id));
  return { ...job, payload: job.payload as Copy };
}

it("a pulled job failed for good is copied into the dead-letter lane, with the job as it settled", async () => {
  const { source, target, clock } = await setupLanes();
  value(await source.stub.enqueue({ id: "j", kind: "k-j", payload: { to: "a@b.c" }, maxAttempts: 2 }));
  await failPulled(source.stub, "j", "boom");
  expect(await owed(source.stub)).toBe(1);
  await deliver(source.stub);
  const job = value(await source.stub.getJob("j"));
  const copy = await copyIn(target.stub, `${source.name}.j`);
  expect(copy).toMatchObject({ kind: "deadletter", queue: null, priority: 0, state: "queued", attempts: 0 });
  expect(copy.payload).toEqual({
    lane: source.name, id: "j", kind: "k-j", payload: { to: "a@b.c" }, outcome: "failed", error: "boom",
    errors: job.errors, attempts: 1, settledAt: clock.now(),
  });
  expect(job.errors).toHaveLength(1);
  expect(value(await source.stub.info()).stats.deadLettered).toBe(1);
  expect(value(await source.stub.info()).deadLetter).toEqual({ lane: target.name });
});

it("an in-process job that fails with no retry is copied", async () => {
  const { source, target } = await setupLanes();
  value(await source.stub.enqueue({ id: "f", kind: "test.fatal", payload: [1, 2] }));
  await expect.poll(async () => value(await source.stub.getJob("f")).state).toBe("settled");
  await deliver(source.stub);
  const copy = await copyIn(target.stub, `${source.name}.f`);
  expect(copy.payload).toMatchObject({ kind: "test.fatal", payload: [1, 2], outcome: "failed", error: "fatal: do not retry", attempts: 1 });
});

it("a job interrupted by recovery (its budget spent) is copied", async () => {
  const { source, target, clock } = await setupLanes();
  value(await source.stub.enqueue({ id: "r", kind: "k-r", recovery: { maxRecoveries: 0, windowMs: 1_000 } }));
  await claimOne(source.stub, { leaseMs: 1_000 });
  clock.advance(1_000);
  await deliver(source.stub);
  const copy = await copyIn(target.stub, `${source.name}.r`);
  expect(copy.payload).toMatchObject({ id: "r", outcome: "interrupted", attempts: 1 });
});

it("a lane failed by the operator copies each job it fails; completed and cancelled jobs are not copied", async () => {
  const { source, target } = await setupLanes();
  for (const id of ["q1", "q2", "ok", "c"]) value(await source.stub.enqueue({ id, kind: `k-${id}` }));
  const done = await claimOne(source.stub, { kinds: ["k-ok"] });
  value(await source.stub.complete("ok", { token: done.lease.token, result: 1 }));
  value(await source.stub.cancel("c"));
  expect(value(await source.stub.failLane({ reason: "downstream gone" })).failed.sort()).toEqual(["q1", "q2"]);
  await deliver(source.stub);
  const copies = value(await target.stub.listJobs({})).jobs;
  expect(copies.map((j) => j.id).sort()).toEqual([`${source.name}.q1`, `${source.name}.q2`]);
  expect(copies.map((j) => (j.payload as Copy).error)).toEqual(["downstream gone", "downstream gone"]);
  expect(value(await source.stub.info()).stats.deadLettered).toBe(2);
});

it("a copy owed when the lane restarts is delivered by the alarm of the next instance", async () => {
  const { source, target, clock } = await setupLanes();
  value(await source.stub.enqueue({ id: "j", kind: "k-j" }));
  await failPulled(source.stub, "j", "boom");
  const stub = await restartLane(source.name, source.stub, clock);
  expect(await wake(stub)).toBe(clock.now());
  await deliver(stub);
  expect((await copyIn(target.stub, `${source.name}.j`)).payload).toMatchObject({ error: "boom" });
  expect(value(await stub.info()).stats.deadLettered).toBe(1);
});

it("a copy whose delivery failed comes due again after a backoff, and is delivered then", async () => {
  const { source, target, clock } = await setupLanes();
  value(await source.stub.enqueue({ id: "j", kind: "k-j" }));
  // The receiver refuses every call for now: its schema is newer than this code knows.
  await sql(target.stub, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from the future', 0)`);
  const refusing = await restartLane(target.name, target.stub, clock);
  await failPulled(source.stub, "j", "boom");
  await fireAlarm(source.stub);
  await expect.poll(() => sql<{ tries: number }>(source.stub, `SELECT tries FROM dead_letter_outbox`).then((r) => r[0]?.tries)).toBe(1);
  const [row] = await sql<{ next_at: number }>(source.stub, `SELECT next_at FROM dead_letter_outbox`);
  expect(row!.next_at).toBeGreaterThan(clock.now());
  expect(await wake(source.stub)).toBe(row!.next_at);
  await sql(refusing, `DELETE FROM schema_migrations WHERE version = 999`);
  const healed = await restartLane(target.name, refusing, clock);
  clock.set(row!.next_at);
  await deliver(source.stub);
  expect((await copyIn(healed, `${source.name}.j`)).payload).toMatchObject({ error: "boom" });
});

it("an id that exists in the dead-letter lane stays as it is and counts as the copy", async () => {
  const { source, target } = await setupLanes();
  value(await target.stub.enqueue({ id: `${source.name}.j`, kind: "mine", payload: "kept" }));
  value(await source.stub.enqueue({ id: "j", kind: "k-j" }));
  await failPulled(source.stub, "j", "boom");
  await deliver(source.stub);
  expect(await copyIn(target.stub, `${source.name}.j`)).toMatchObject({ kind: "mine", payload: "kept" });
  expect(value(await source.stub.info()).stats.deadLettered).toBe(0);
});

it("a job requeued and failed again while its copy is kept makes no second copy", async () => {
  const { source, target } = await setupLanes();
  value(await source.stub.enqueue({ id: "j", kind: "k-j" }));
  await failPulled(source.stub, "j", "first");
  await deliver(source.stub);
  value(await source.stub.requeue("j"));
  await failPulled(source.stub, "j", "second");
  await deliver(source.stub);
  expect((await copyIn(target.stub, `${source.name}.j`)).payload).toMatchObject({ error: "first" });
  expect(value(await target.stub.listJobs({})).jobs).toHaveLength(1);
  expect(value(await source.stub.info()).stats.deadLettered).toBe(1);
});

it("a copy goes to the dead-letter lane named when its job settled, though the setting changed before delivery", async () => {
  const { source, all } = await setupLanes(3);
  const [, b, c] = all as { name: string; stub: LaneStub }[];
  value(await source.stub.enqueue({ id: "j1", kind: "k-j1" }));
  value(await source.stub.enqueue({ id: "j2", kind: "k-j2" }));
  await failPulled(source.stub, "j1", "to b");
  value(await source.stub.configure({ deadLetter: { lane: c!.name } }));
  await failPulled(source.stub, "j2", "to c");
  await deliver(source.stub);
  expect(value(await b!.stub.listJobs({})).jobs.map((j) => j.id)).toEqual([`${source.name}.j1`]);
  expect(value(await c!.stub.listJobs({})).jobs.map((j) => j.id)).toEqual([`${source.name}.j2`]);
  // Cleared: a failure after it is copied nowhere.
  value(await source.stub.configure({ deadLetter: null }));
  value(await source.stub.enqueue({ id: "j3", kind: "k-j3" }));
  await failPulled(source.stub, "j3", "nowhere");
  expect(await owed(source.stub)).toBe(0);
  expect(value(await source.stub.info()).deadLetter).toBeNull();
});

it("a lane without a dead-letter lane writes nothing when a job fails", async () => {
  const { lanes: [plain] } = await lanes(1, "dl-none");
  value(await plain!.stub.enqueue({ id: "j", kind: "k-j" }));
  await failPulled(plain!.stub, "j", "boom");
  expect(await owed(plain!.stub)).toBe(0);
  expect(value(await plain!.stub.info())).toMatchObject({ deadLetter: null, stats: { deadLettered: 0 } });
});

it("a copy's id may be longer than a name: a copy of a copy is made, and read by its id", async () => {
  const { source, target, all } = await setupLanes(3);
  const third = all[2]!;
  value(await target.stub.configure({ deadLetter: { lane: third.name } }));
  const long = "x".repeat(100);
  value(await source.stub.enqueue({ id: long, kind: "k-long" }));
  await failPulled(source.stub, long, "first", "k-long");
  await deliver(source.stub);
  const copyId = `${source.name}.${long}`;
  expect(copyId.length).toBeGreaterThan(128);
  const claimed = await claimOne(target.stub, { kinds: ["deadletter"] });
  expect(claimed.id).toBe(copyId);
  value(await target.stub.fail(copyId, { token: claimed.lease.token, error: "again", retry: false }));
  await deliver(target.stub);
  const twice = await copyIn(third.stub, `${target.name}.${copyId}`);
  expect(twice.payload).toMatchObject({ lane: target.name, id: copyId, kind: "deadletter", error: "again" });
  expect((twice.payload.payload as Copy).payload).toBeNull();
});

it("a copy whose id would pass 4,096 characters is not made: dropped from the outbox, logged (lane.dead_letter_dropped)", async () => {
  const { source, target, all } = await setupLanes(3);
  const third = all[2]!;
  value(await target.stub.configure({ deadLetter: { lane: third.name } }));
  // A copy of a copy of … whose id is as long as a copy's may be: its own copy's would be longer.
  const long = `${source.name}.${"x".repeat(MAX_DEAD_LETTER_ID_CHARS - source.name.length - 1)}`;
  expect(long).toHaveLength(MAX_DEAD_LETTER_ID_CHARS);
  expect(value(await target.stub.enqueueDeadLetters({ shards: 1, copies: [{ id: long, payload: "{}" }] }))).toEqual(["created"]);
  const claimed = await claimOne(target.stub, { kinds: ["deadletter"] });
  expect(claimed.id).toBe(long);
  value(await target.stub.fail(long, { token: claimed.lease.token, error: "again", retry: false }));
  expect(await owed(target.stub)).toBe(1);
  const lines: string[] = [];
  vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
  try {
    await deliver(target.stub);
  } finally {
    vi.restoreAllMocks();
  }
  const dropped = lines.filter((l) => l.includes('"lane.dead_letter_dropped"')).map((l) => JSON.parse(l) as { lane: string; to: string; ids: string[] });
  expect(dropped).toEqual([expect.objectContaining({ lane: target.name, to: third.name, ids: [long] })]);
  expect(await sql(third.stub, `SELECT id FROM jobs`)).toEqual([]);
  expect(value(await target.stub.info()).stats.deadLettered).toBe(0);
  expect(value(await target.stub.getJob(long))).toMatchObject({ outcome: "failed", error: "again" });
});

it("refuses a dead-letter lane naming the lane itself, or a bad name, or an unknown field, changing nothing", async () => {
  const { source, target } = await setupLanes();
  for (const deadLetter of [{ lane: source.name }, { lane: "no spaces" }, { lane: target.name, extra: 1 }, { queue: "q" }, "lane"]) {
    const refused = await source.stub.configure({ concurrency: 3, deadLetter });
    expect(refused.ok).toBe(false);
    if (!refused.ok) {
      expect(refused.error.code).toBe("invalid_request");
      expect(JSON.stringify(refused.error.details)).toContain("deadLetter");
    }
  }
  expect(value(await source.stub.info())).toMatchObject({ concurrency: 10, deadLetter: { lane: target.name } });
});


it("a job whose payload is held in R2 is copied with its payload whole, and copies beside it are not held up", async () => {
  const { source, target } = await setupLanes(2, `${PAYLOADS_LANE_PREFIX}dl`);
  const payload = { big: "x".repeat(200_000) };
  value(await source.stub.enqueue({ id: "held", kind: "k-held", payload }));
  value(await source.stub.enqueue({ id: "plain", kind: "k-plain", payload: 1 }));
  // Its row holds a reference to its object, not JSON.
  expect((await sql<{ p: string }>(source.stub, `SELECT substr(payload, 1, 1) AS p FROM jobs WHERE id = 'held'`))[0]!.p).toBe("@");
  await failPulled(source.stub, "held", "boom");
  await failPulled(source.stub, "plain", "boom");
  await deliver(source.stub);
  expect((await copyIn(target.stub, `${source.name}.held`)).payload).toMatchObject({ id: "held", payload });
  expect((await copyIn(target.stub, `${source.name}.plain`)).payload).toMatchObject({ id: "plain", payload: 1 });
});

it("a job failed by a failed dependency, and one failed by its waitpoint timing out, are copied", async () => {
  const { source, target, clock } = await setupLanes();
  value(await source.stub.enqueue({ id: "dep", kind: "k-dep" }));
  value(await source.stub.enqueue({ id: "child", kind: "k-child", dependsOn: [{ id: "dep" }], dependencyFailure: "fail" }));
  value(await source.stub.createWaitpoint({ id: "w", timeoutMs: 1_000 }));
  value(await source.stub.enqueue({ id: "waiter", kind: "k-waiter", dependsOn: [{ waitpoint: "w" }], dependencyFailure: "fail" }));
  await failPulled(source.stub, "dep", "boom");
  clock.advance(1_000);
  await expect.poll(async () => {
    await fireAlarm(source.stub);
    return value(await target.stub.listJobs({})).jobs.map((j) => j.id).sort();
  }).toEqual([`${source.name}.child`, `${source.name}.dep`, `${source.name}.waiter`]);
  expect((await copyIn(target.stub, `${source.name}.child`)).payload).toMatchObject({ outcome: "failed", attempts: 0 });
  expect((await copyIn(target.stub, `${source.name}.waiter`)).payload).toMatchObject({ outcome: "failed", attempts: 0 });
});
