/**
 * The move of a debounce key's queued job between shards (docs/concepts.md "Sharded lanes"), through
 * what can happen between the router's calls: the sender's transaction committed and the router gone
 * (the sender's alarm delivers the move), an id given by its caller whose own shard is a third one (its
 * reservation follows the job), and a job other jobs wait for (its dependents' rows go with it, and no
 * notice of a deletion is sent).
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { JobRouting } from "../../src/routing/job-routing.js";
import { shardObjectName } from "../../src/shared/shards.js";
import type { Lane } from "../../src/durable/lane.js";
import type { LaneParts } from "../../src/durable/lane-parts.js";
import { KEY_MOVE_IN_FLIGHT_MS } from "../../src/durable/shards/key-moves.js";
import { call, expectError, get, post, PULL_KIND, T0 } from "../helpers/http.js";
import { fireAlarm, sql, type LaneStub } from "../helpers/lane.js";
import { keyOn, setupSharded, type ShardedFixture } from "../helpers/shards.js";

const SHARDS = 4;

const parts = (lane: Lane) => (lane as unknown as { parts: LaneParts }).parts;

async function enqueue(fixture: ShardedFixture, spec: Record<string, unknown>, status = 201): Promise<any> {
  const answer = await post(`${fixture.base}/jobs`, { kind: PULL_KIND, payload: {}, ...spec });
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  return answer.body;
}

async function laneOf(fixture: ShardedFixture): Promise<{ counts: Record<string, number>; stats: Record<string, number> }> {
  return (await get(fixture.base)).body;
}

describe("shards: a debounce key's job moved between shards", () => {
  it("a move its sender committed but the router never delivered is delivered by the sender's alarm", async () => {
    const fixture = await setupSharded(SHARDS);
    const [S, T, H] = [1, 2, 3];
    const debounce = { key: keyOn(H, SHARDS, "key"), delayMs: 60_000 };
    const qa = keyOn(S, SHARDS, "qa");
    const qb = keyOn(T, SHARDS, "qb");
    const first = await enqueue(fixture, { payload: { n: 1 }, queue: qa, debounce });
    const id = first.job.id;
    const nonce = (await sql<{ nonce: string }>(fixture.shard(H), `SELECT nonce FROM key_reservations WHERE key = ?`, debounce.key))[0]!.nonce;
    // The sender's transaction alone, as a router that died right after it would leave it.
    await runInDurableObject(fixture.shard(S), (lane: Lane) => {
      const { keyMoves, store, wake } = parts(lane);
      const taken = store.transactionSync(() => keyMoves.take(debounce.key, nonce, T, { kind: "other.kind", payload: { n: 2 }, queue: qb, debounce, shards: SHARDS }));
      expect(taken.ok && taken.value?.job_id).toBe(id);
      wake.afterChange();
    });
    expect(await sql(fixture.shard(T), `SELECT id FROM jobs`)).toEqual([]);
    expect((await laneOf(fixture)).counts.queued).toBe(0);
    // The job on its way is the lane's: its shard count stays.
    expectError(await call("PATCH", fixture.base, { json: { shards: 2 } }), 409, "lane_not_empty");

    fixture.clock.advance(KEY_MOVE_IN_FLIGHT_MS);
    expect(await fireAlarm(fixture.shard(S))).toBe(true);
    expect(await sql(fixture.shard(S), `SELECT nonce FROM key_moves`)).toEqual([]);
    expect((await sql<{ id: string; queue: string }>(fixture.shard(T), `SELECT id, queue FROM jobs`)).map((r) => [r.id, r.queue])).toEqual([[id, qb]]);
    expect(await sql(fixture.shard(H), `SELECT shard FROM key_reservations WHERE key = ?`, debounce.key)).toEqual([{ shard: T }]);
    const { counts, stats } = await laneOf(fixture);
    expect(counts.queued).toBe(1);
    expect(stats).toMatchObject({ enqueued: 1, debounced: 1 });
    expect((await get(`${fixture.base}/jobs/${id}`)).body).toMatchObject({ id, kind: "other.kind", queue: qb, payload: { n: 2 } });

    // A fresh enqueue of the key debounces that job, on its shard, and a delivery again changes nothing.
    const again = await enqueue(fixture, { payload: { n: 3 }, queue: qb, debounce }, 200);
    expect([again.status, again.job.id]).toEqual(["debounced", id]);
    expect((await laneOf(fixture)).counts.queued).toBe(1);
  });

  it("a move its receiver took before the sender's crash is taken once when the alarm delivers it again", async () => {
    const fixture = await setupSharded(SHARDS);
    const [S, T, H] = [1, 2, 3];
    const debounce = { key: keyOn(H, SHARDS, "key"), delayMs: 60_000 };
    const qb = keyOn(T, SHARDS, "qb");
    const id = (await enqueue(fixture, { queue: keyOn(S, SHARDS, "qa"), debounce })).job.id;
    const nonce = (await sql<{ nonce: string }>(fixture.shard(H), `SELECT nonce FROM key_reservations WHERE key = ?`, debounce.key))[0]!.nonce;
    await runInDurableObject(fixture.shard(S), (lane: Lane) => {
      const { keyMoves, store, wake } = parts(lane);
      store.transactionSync(() => keyMoves.take(debounce.key, nonce, T, { kind: PULL_KIND, payload: { n: 2 }, queue: qb, debounce, shards: SHARDS }));
      wake.afterChange();
    });
    const [move] = await sql<{ nonce: string; row: string; dependents: string }>(fixture.shard(S), `SELECT nonce, row, dependents FROM key_moves`);
    const taken = await fixture.shard(T).acceptKeyMove(move!.nonce, debounce.key, move!.row, move!.dependents, S);
    expect(taken.ok && taken.value?.id).toBe(id);

    fixture.clock.advance(KEY_MOVE_IN_FLIGHT_MS);
    expect(await fireAlarm(fixture.shard(S))).toBe(true);
    expect(await sql(fixture.shard(S), `SELECT nonce FROM key_moves`)).toEqual([]);
    expect(await sql(fixture.shard(T), `SELECT id FROM jobs`)).toEqual([{ id }]);
    expect(await sql(fixture.shard(H), `SELECT shard FROM key_reservations WHERE key = ?`, debounce.key)).toEqual([{ shard: T }]);
    const { counts, stats } = await laneOf(fixture);
    expect(counts.queued).toBe(1);
    expect(stats).toMatchObject({ enqueued: 1, debounced: 1 });
  });

  it("a job whose id its caller gave, owned by a third shard, is found there after its move, and its id stays taken", async () => {
    const fixture = await setupSharded(SHARDS);
    const [X, S, T, H] = [0, 1, 2, 3];
    const id = keyOn(X, SHARDS, "job");
    const debounce = { key: keyOn(H, SHARDS, "key"), delayMs: 60_000 };
    await enqueue(fixture, { id, queue: keyOn(S, SHARDS, "qa"), debounce });
    const second = await enqueue(fixture, { payload: { n: 2 }, queue: keyOn(T, SHARDS, "qb"), debounce }, 200);
    expect([second.status, second.job.id]).toEqual(["debounced", id]);
    expect(await sql(fixture.shard(X), `SELECT shard FROM reservations WHERE id = ?`, id)).toEqual([{ shard: T }]);
    expect((await get(`${fixture.base}/jobs/${id}`)).body).toMatchObject({ id, queue: keyOn(T, SHARDS, "qb"), payload: { n: 2 } });
    expectError(await post(`${fixture.base}/jobs`, { id, kind: PULL_KIND, queue: keyOn(X, SHARDS, "qc") }), 409, "job_conflict");
    expect((await laneOf(fixture)).counts.queued).toBe(1);
  });

  it("a job other jobs wait for moves with their rows: no notice of a deletion, and its outcome reaches them", async () => {
    const fixture = await setupSharded(SHARDS);
    const [S, T, H] = [1, 2, 3];
    const debounce = { key: keyOn(H, SHARDS, "key"), delayMs: 0 };
    const parent = (await enqueue(fixture, { queue: keyOn(S, SHARDS, "qa"), debounce })).job.id;
    const child = (await enqueue(fixture, { queue: keyOn(0, SHARDS, "qc"), dependsOn: [{ id: parent }] })).job;
    expect(child.state).toBe("blocked");
    await enqueue(fixture, { payload: { n: 2 }, queue: keyOn(T, SHARDS, "qb"), debounce }, 200);
    expect(await sql(fixture.shard(S), `SELECT id FROM outbox`)).toEqual([]);
    expect((await sql(fixture.shard(T), `SELECT d.id FROM dependents d JOIN jobs j ON j.seq = d.dep_seq WHERE j.id = ?`, parent))).toEqual([{ id: child.id }]);
    expect((await get(`${fixture.base}/jobs/${parent}/dependents`)).body).toEqual({ dependents: [{ lane: fixture.lane, id: child.id }] });
    await fireAlarm(fixture.shard(S));
    expect((await get(`${fixture.base}/jobs/${child.id}`)).body.state).toBe("blocked");

    const claimed = await post(`${fixture.base}/claims`, { kinds: [PULL_KIND], max: 10 });
    const job = claimed.body.jobs.find((j: { id: string }) => j.id === parent);
    expect(job, JSON.stringify(claimed.body)).toBeDefined();
    expect((await post(`${fixture.base}/jobs/${parent}/complete`, { token: job.lease.token, result: { ok: 1 } })).status).toBe(200);
    await fireAlarm(fixture.shard(T));
    await expect.poll(async () => (await get(`${fixture.base}/jobs/${child.id}`)).body.state, { timeout: 5_000, interval: 20 }).toBe("queued");
  });

  it("concurrent enqueues of one key with queues on every shard: one queued job, every answer naming it", async () => {
    const fixture = await setupSharded(SHARDS);
    const debounce = { key: keyOn(1, SHARDS, "key"), delayMs: 60_000 };
    const queues = Array.from({ length: 12 }, (_, i) => keyOn(i % SHARDS, SHARDS, `q${i}`));
    const answers = await Promise.all(queues.map((queue, n) => post(`${fixture.base}/jobs`, { kind: PULL_KIND, payload: { n }, queue, debounce })));
    expect(answers.map((a) => a.status).sort(), JSON.stringify(answers.map((a) => a.body))).toEqual([...Array(11).fill(200), 201]);
    const ids = new Set(answers.map((a) => a.body.job.id));
    expect(ids.size).toBe(1);
    const { counts, stats } = await laneOf(fixture);
    expect(counts.queued).toBe(1);
    expect(stats).toMatchObject({ enqueued: 1, debounced: 11 });
    const job = (await get(`${fixture.base}/jobs/${[...ids][0]}`)).body;
    const listed = (await get(`${fixture.base}/jobs?limit=20`)).body.jobs;
    expect(listed.map((j: { id: string; queue: string }) => [j.id, j.queue])).toEqual([[job.id, job.queue]]);
  });

  it("a schedule's fire debounces its key's job queued on another shard, which moves to the fire's, and the schedule advances", async () => {
    const fixture = await setupSharded(SHARDS);
    const MINUTE = 60_000;
    const debounce = { key: keyOn(3, SHARDS, "key"), delayMs: 1_000 };
    const first = await enqueue(fixture, { payload: { n: 1 }, queue: keyOn(1, SHARDS, "qa"), debounce });
    const put = await call("PUT", `${fixture.base}/schedules/tick`, { json: { everyMs: MINUTE, job: { kind: PULL_KIND, payload: { fired: true }, queue: keyOn(2, SHARDS, "qb"), debounce } } });
    expect(put.status, JSON.stringify(put.body)).toBe(201);
    fixture.clock.set(T0 + MINUTE);
    expect(await runDurableObjectAlarm(fixture.shard(0))).toBe(true);
    expect((await get(`${fixture.base}/jobs/${first.job.id}`)).body).toMatchObject({ queue: keyOn(2, SHARDS, "qb"), payload: { fired: true }, state: "queued" });
    expect((await get(`${fixture.base}/schedules/tick`)).body).toMatchObject({ lastRunAt: T0 + MINUTE, lastJobId: first.job.id });
    const { counts, stats } = await laneOf(fixture);
    expect(counts.queued).toBe(1);
    expect(stats).toMatchObject({ enqueued: 1, debounced: 1 });
  });

  it("an enqueue whose id names the key's job with another spec is a conflict, as in one object, wherever the id's shard is", async () => {
    const fixture = await setupSharded(SHARDS);
    const [T, H] = [2, 3];
    const id = keyOn(T, SHARDS, "job");
    const debounce = { key: keyOn(H, SHARDS, "key"), delayMs: 60_000 };
    await enqueue(fixture, { id, debounce });
    expectError(await post(`${fixture.base}/jobs`, { id, kind: PULL_KIND, payload: {}, queue: keyOn(T, SHARDS, "qb"), debounce }), 409, "job_conflict");
    expect((await get(`${fixture.base}/jobs/${id}`)).body).toMatchObject({ queue: null, state: "queued" });
    expect((await laneOf(fixture)).stats).toMatchObject({ enqueued: 1, debounced: 0 });
  });

  it("a write of the key to a sender whose move is owed (its delivery failed) has the sender deliver it at once, and then debounces the key's job", async () => {
    const fixture = await setupSharded(SHARDS);
    const [S, T, H] = [1, 2, 3];
    const debounce = { key: keyOn(H, SHARDS, "key"), delayMs: 60_000 };
    const qa = keyOn(S, SHARDS, "qa");
    const id = (await enqueue(fixture, { queue: qa, debounce })).job.id;
    const nonce = (await sql<{ nonce: string }>(fixture.shard(H), `SELECT nonce FROM key_reservations WHERE key = ?`, debounce.key))[0]!.nonce;
    // The sender's transaction alone: its delivery never came, and its alarm is seconds away.
    await runInDurableObject(fixture.shard(S), (lane: Lane) => {
      const { keyMoves, store } = parts(lane);
      store.transactionSync(() => keyMoves.take(debounce.key, nonce, T, { kind: PULL_KIND, payload: { n: 2 }, queue: keyOn(T, SHARDS, "qb"), debounce, shards: SHARDS }));
    });
    // The key's own shard still sends a write for S to S, under the nonce S is moving the job away from.
    const again = await enqueue(fixture, { payload: { n: 3 }, queue: qa, debounce }, 200);
    expect([again.status, again.job.id]).toEqual(["debounced", id]);
    expect(await sql(fixture.shard(S), `SELECT nonce FROM key_moves`)).toEqual([]);
    expect((await get(`${fixture.base}/jobs/${id}`)).body).toMatchObject({ queue: qa, payload: { n: 3 } });
    const { counts, stats } = await laneOf(fixture);
    expect(counts.queued).toBe(1);
    expect(stats).toMatchObject({ enqueued: 1, debounced: 2 });
  });

  describe("a sharded batch", () => {
    const batch = (fixture: ShardedFixture, jobs: Record<string, unknown>[]) => post(`${fixture.base}/jobs/batch`, { jobs: jobs.map((job) => ({ kind: PULL_KIND, payload: {}, ...job })) });

    it("a job of a batch debounces its key's job queued on another shard, which moves to the batch job's", async () => {
      const fixture = await setupSharded(SHARDS);
      const debounce = { key: keyOn(3, SHARDS, "key"), delayMs: 60_000 };
      const first = await enqueue(fixture, { queue: keyOn(1, SHARDS, "qa"), debounce });
      const answer = await batch(fixture, [{ queue: keyOn(0, SHARDS, "qc") }, { payload: { n: 2 }, queue: keyOn(2, SHARDS, "qb"), debounce }]);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.results[1]).toEqual({ id: first.job.id, status: "debounced" });
      expect(answer.body.results[0].status).toBe("queued");
      expect((await get(`${fixture.base}/jobs/${first.job.id}`)).body).toMatchObject({ queue: keyOn(2, SHARDS, "qb"), payload: { n: 2 } });
      const { counts, stats } = await laneOf(fixture);
      expect(counts.queued).toBe(2);
      expect(stats).toMatchObject({ enqueued: 2, debounced: 1 });
    });

    it("a batch's job reserves its key: a later enqueue with another queue debounces it", async () => {
      const fixture = await setupSharded(SHARDS);
      const debounce = { key: keyOn(3, SHARDS, "key"), delayMs: 60_000 };
      const answer = await batch(fixture, [{ queue: keyOn(1, SHARDS, "qa"), debounce }]);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const later = await enqueue(fixture, { queue: keyOn(2, SHARDS, "qb"), debounce }, 200);
      expect([later.status, later.job.id]).toEqual(["debounced", answer.body.results[0].id]);
      expect((await laneOf(fixture)).counts.queued).toBe(1);
    });

    it("a batch waiting on its dependencies in other lanes holds its jobs' keys: a hand-over of one meanwhile is asked again, and the key keeps one job", async () => {
      const fixture = await setupSharded(SHARDS);
      const other = crypto.randomUUID();
      expect((await post(`/v1/lanes/${other}/jobs`, { id: "c1", kind: PULL_KIND, payload: {} })).status).toBe(201);
      const [S, T, H] = [1, 2, 3];
      const debounce = { key: keyOn(H, SHARDS, "key"), delayMs: 60_000 };
      const reserved = await fixture.shard(H).reserveKey(debounce.key, S, null);
      const nonce = reserved.ok && reserved.value.status === "new" ? reserved.value.nonce! : "";
      expect(nonce).not.toBe("");
      const handed = await runInDurableObject(fixture.shard(S), async (lane: Lane) => {
        const { enqueue, keyMoves } = parts(lane);
        const jobs = [
          { kind: PULL_KIND, payload: {}, queue: keyOn(S, SHARDS, "qd"), dependsOn: [{ lane: other, id: "c1" }] },
          { kind: PULL_KIND, payload: {}, queue: keyOn(S, SHARDS, "qa"), debounce, keyReservation: nonce },
        ];
        const written = enqueue.batch(jobs, undefined, SHARDS);
        // A single enqueue of the key with its queue on T asks the batch's shard for the key's job now.
        const handing = keyMoves.handOver(debounce.key, nonce, T, { kind: PULL_KIND, payload: { n: 2 }, queue: keyOn(T, SHARDS, "qb"), debounce, shards: SHARDS });
        const answer = await written;
        expect(answer.ok ? answer.value.map((r) => r.status) : answer.error.code).toEqual(["queued", "queued"]);
        const done = await handing;
        return done.ok ? done.value.status : done.error.code;
      });
      expect(handed).toBe("retry");
      // Asked again, the key's job moves: one queued job of the key on the lane.
      const later = await enqueue(fixture, { payload: { n: 3 }, queue: keyOn(T, SHARDS, "qb"), debounce }, 200);
      expect(later.status).toBe("debounced");
      const keyed = (await get(`${fixture.base}/jobs?limit=20`)).body.jobs.filter((j: { debounceKey?: string; queue: string }) => j.queue !== keyOn(S, SHARDS, "qd"));
      expect(keyed.map((j: { id: string }) => j.id)).toEqual([later.job.id]);
    });

    it("a batch's job on its key's own shard is refused there if the key was pointed at another shard since its reservation, and debounces that job when routed again", async () => {
      const fixture = await setupSharded(SHARDS);
      const [U, H] = [1, 3];
      const debounce = { key: keyOn(H, SHARDS, "key"), delayMs: 60_000 };
      // The batch's write on H is held until a single enqueue of the key with its queue on U is done.
      let arrive!: () => void;
      let release!: () => void;
      const reached = new Promise<void>((resolve) => (arrive = resolve));
      const gate = new Promise<void>((resolve) => (release = resolve));
      let first = true;
      const held = shardObjectName(fixture.lane, H);
      const router = new JobRouting({
        getByName(name: string): LaneStub {
          const stub = env.LANE.getByName(name);
          if (name !== held) return stub;
          return new Proxy(stub, {
            get(target, property) {
              if (property === "enqueueBatch" && first) {
                first = false;
                return async (request: object) => {
                  arrive();
                  await gate;
                  return target.enqueueBatch(request);
                };
              }
              return (...args: unknown[]) => (target as unknown as Record<PropertyKey, (...a: unknown[]) => unknown>)[property]!(...args);
            },
          });
        },
      });
      const batched = router.enqueueBatch(fixture.lane, { jobs: [{ kind: PULL_KIND, payload: { n: 1 }, queue: keyOn(H, SHARDS, "qh"), debounce }] });
      await reached;
      const single = await enqueue(fixture, { payload: { n: 2 }, queue: keyOn(U, SHARDS, "qu"), debounce });
      release();
      const answer = await batched;
      expect(answer.ok ? answer.value.results : answer.error.code).toEqual([{ id: single.job.id, status: "debounced" }]);
      const { counts, stats } = await laneOf(fixture);
      expect(counts.queued).toBe(1);
      expect(stats).toMatchObject({ enqueued: 1, debounced: 1 });
    });

    it("a batch refused for one job's bad input moves nothing", async () => {
      const fixture = await setupSharded(SHARDS);
      const debounce = { key: keyOn(3, SHARDS, "key"), delayMs: 60_000 };
      const first = await enqueue(fixture, { queue: keyOn(1, SHARDS, "qa"), debounce });
      const answer = await batch(fixture, [{ queue: keyOn(2, SHARDS, "qb"), debounce }, { queue: keyOn(0, SHARDS, "qc"), payload: "x".repeat(200_000) }]);
      expectError(answer, 413, "payload_too_large");
      expect((await get(`${fixture.base}/jobs/${first.job.id}`)).body).toMatchObject({ queue: keyOn(1, SHARDS, "qa") });
      expect((await laneOf(fixture)).stats).toMatchObject({ enqueued: 1, debounced: 0 });
    });
  });
});

