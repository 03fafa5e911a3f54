/**
 * An id's idempotency across shards under concurrency (docs/concepts.md "Sharded lanes"): two
 * enqueues of one id with different queues route to different shards, and whatever the interleaving
 * of their calls, one job is written and the other is answered 409 `job_conflict`, as in one object.
 * The interleavings are driven through the router itself: one enqueue's write is held at its
 * transport (its `send`) while the other runs to its end, then let go.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createLaneClient } from "../../src/client/rpc.js";
import { JobRouting } from "../../src/routing/job-routing.js";
import type { LaneStub } from "../helpers/lane.js";
import type { EnqueueAnswer } from "../../src/shared/answers.js";
import type { QueueError, Result } from "../../src/shared/errors.js";
import { shardOf } from "../../src/shared/shards.js";
import type { Lane } from "../../src/durable/lane.js";
import type { LaneParts } from "../../src/durable/lane-parts.js";
import type { ShardRpc } from "../../src/durable/rpc/shards.js";
import { post, PULL_KIND } from "../helpers/http.js";
import { keyOn, setupSharded, type ShardedFixture } from "../helpers/shards.js";

const SHARDS = 4;

const router = () => new JobRouting(env.LANE);
const plainSend = (stub: LaneStub, _name: string, request: object) => stub.enqueue(request) as Promise<Result<EnqueueAnswer>>;

/** A send held until `release`; `reached` resolves once the router has come to it (its reservation made). */
function heldSend(): { send: typeof plainSend; reached: Promise<void>; release: () => void } {
  let arrive!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((resolve) => (arrive = resolve));
  const gate = new Promise<void>((resolve) => (release = resolve));
  let first = true;
  const send: typeof plainSend = async (stub, name, request) => {
    if (first) {
      first = false;
      arrive();
      await gate;
    }
    return plainSend(stub, name, request);
  };
  return { send, reached, release };
}

/** Every shard's jobs with id `id` (a job written twice shows on two shards). */
async function copiesOf(fixture: ShardedFixture, id: string): Promise<number[]> {
  const where: number[] = [];
  for (let i = 0; i < fixture.shards; i++) {
    const page = await fixture.shard(i).listShardPage({ limit: 500 }, 0);
    if (!page.ok) throw new Error(page.error.message);
    if (page.value.jobs.some((job) => job.id === id)) where.push(i);
  }
  return where;
}

function outcomes(answers: Result<EnqueueAnswer>[]): string[] {
  return answers.map((a) => (a.ok ? a.value.status : a.error.code)).sort();
}

/** An id whose own shard is `home`, and queues on shards `a` and `b`. */
function setting(home: number, a: number, b: number) {
  return { id: keyOn(home, SHARDS, "id"), qa: keyOn(a, SHARDS, "qa"), qb: keyOn(b, SHARDS, "qb") };
}

describe("shards: an id's idempotency under concurrent enqueues", () => {
  /** B reserves the id and is held before its write; A runs to its end; then B writes. */
  async function interleaved(home: number, a: number, b: number): Promise<void> {
    const fixture = await setupSharded(SHARDS);
    const { id, qa, qb } = setting(home, a, b);
    const held = heldSend();
    const late = router().enqueue(fixture.lane, { id, kind: PULL_KIND, payload: {}, queue: qb }, held.send);
    await held.reached;
    const first = await router().enqueue(fixture.lane, { id, kind: PULL_KIND, payload: {}, queue: qa }, plainSend);
    held.release();
    expect(outcomes([first, await late])).toEqual(["job_conflict", "queued"]);
    expect(await copiesOf(fixture, id)).toHaveLength(1);
  }

  it("a write on the id's own shard while another shard's reservation is in flight: one job, one conflict", async () => {
    // A's queue maps to the id's own shard (1); B's to shard 2, so B reserves the id on shard 1 first.
    await interleaved(1, 1, 2);
  });

  it("two writes on two shards, neither the id's own: one job, one conflict", async () => {
    await interleaved(0, 2, 3);
  });

  it("a reservation whose writer never comes (a crash) is reclaimed, and its late write is refused", async () => {
    const fixture = await setupSharded(SHARDS);
    const { id, qa, qb } = setting(3, 1, 2);
    const held = heldSend();
    const late = router().enqueue(fixture.lane, { id, kind: PULL_KIND, payload: {}, queue: qb }, held.send);
    await held.reached;
    // The reservation for shard 2 has no job: a new enqueue of the id takes it over.
    const taken = await post(`${fixture.base}/jobs`, { id, kind: PULL_KIND, payload: {}, queue: qa });
    expect(taken.status, JSON.stringify(taken.body)).toBe(201);
    // The same request again is its duplicate, as in one object.
    expect((await post(`${fixture.base}/jobs`, { id, kind: PULL_KIND, payload: {}, queue: qa })).body.status).toBe("duplicate");
    held.release();
    const answer = await late;
    expect(answer.ok ? answer.value.status : answer.error.code).toBe("job_conflict");
    expect(await copiesOf(fixture, id)).toEqual([shardOf(qa, SHARDS)]);
  });

  it("many concurrent enqueues of one id over every queue's shard: one job, the rest duplicates of it or conflicts", async () => {
    for (let round = 0; round < 6; round++) {
      const fixture = await setupSharded(SHARDS);
      const id = keyOn(round % SHARDS, SHARDS, `many${round}`);
      const queues = [0, 1, 2, 3, 0, 1, 2, 3].map((s, i) => keyOn(s, SHARDS, `q${i % 4}`));
      const answers = await Promise.all(queues.map((queue) => router().enqueue(fixture.lane, { id, kind: PULL_KIND, payload: {}, queue }, plainSend)));
      const written = answers.filter((a) => a.ok && a.value.status === "queued");
      expect(written, JSON.stringify(outcomes(answers))).toHaveLength(1);
      const winner = (written[0] as { value: EnqueueAnswer }).value.job.queue;
      for (const [i, answer] of answers.entries()) {
        if (answer.ok) expect(answer.value.job.queue).toBe(winner);
        else expect(answer.error.code, `${queues[i]}`).toBe("job_conflict");
        if (!answer.ok) expect(queues[i]).not.toBe(winner);
      }
      expect(await copiesOf(fixture, id)).toHaveLength(1);
    }
  });

  it("a reservation its shard refused before its taker crashed is taken over by the next write there", async () => {
    const fixture = await setupSharded(SHARDS);
    const { id, qb } = setting(0, 2, 2);
    const reserved = await fixture.shard(0).reserve(id, 2, qb, null);
    if (!reserved.ok || reserved.value.status !== "new") throw new Error(JSON.stringify(reserved));
    expect(await fixture.shard(2).refuseReservation(id, reserved.value.nonce)).toEqual({ ok: true, value: { status: "refused" } });
    // A write under the refused nonce is refused; through the router, the id is reserved anew and written.
    const late = await fixture.shard(2).enqueue({ id, kind: PULL_KIND, payload: {}, queue: qb, shards: SHARDS, reservation: reserved.value.nonce });
    expect(late.ok ? late.value : late.error.code).toBe("wrong_shard");
    const taken = await post(`${fixture.base}/jobs`, { id, kind: PULL_KIND, payload: {}, queue: qb });
    expect(taken.status, JSON.stringify(taken.body)).toBe(201);
    expect(await copiesOf(fixture, id)).toEqual([2]);
  });

  it("a shard refuses a job whose id is its own elsewhere and that carries no reservation", async () => {
    const fixture = await setupSharded(SHARDS);
    const { id, qb } = setting(1, 3, 3);
    const unreserved = await fixture.shard(3).enqueue({ id, kind: PULL_KIND, payload: {}, queue: qb, shards: SHARDS });
    expect(unreserved.ok ? unreserved.value : unreserved.error.code).toBe("wrong_shard");
    expect(await copiesOf(fixture, id)).toEqual([]);
  });

  it("a batch's job and a single enqueue of its id on another shard: one job", async () => {
    const fixture = await setupSharded(SHARDS);
    const { id, qa, qb } = setting(0, 1, 3);
    const held = heldSend();
    const single = router().enqueue(fixture.lane, { id, kind: PULL_KIND, payload: {}, queue: qb }, held.send);
    await held.reached;
    const batch = await post(`${fixture.base}/jobs/batch`, { jobs: [{ id, kind: PULL_KIND, payload: {}, queue: qa }, { kind: PULL_KIND, payload: {} }] });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    held.release();
    const answer = await single;
    expect(answer.ok ? answer.value.status : answer.error.code).toBe("job_conflict");
    expect(await copiesOf(fixture, id)).toEqual([1]);
  });

  it("concurrent enqueues of one id with two queues through the RPC client, grouped or not: one job", async () => {
    for (const groupCommit of [true, false]) {
      const fixture = await setupSharded(SHARDS);
      const { id, qa, qb } = setting(1, 2, 3);
      const lane = createLaneClient(env.LANE, { groupCommit }).lane(fixture.lane);
      const answers = await Promise.all(
        [qa, qb, qa, qb].map((queue) => lane.enqueue({ id, kind: PULL_KIND, payload: {}, queue }).then((a) => a.status, (e: QueueError) => e.code)),
      );
      expect(answers.filter((a) => a === "queued"), JSON.stringify(answers)).toHaveLength(1);
      expect(answers.filter((a) => a === "job_conflict")).toHaveLength(2);
      expect(await copiesOf(fixture, id)).toHaveLength(1);
    }
  });
  it("a batch waiting on its dependencies in other lanes holds every id it writes: a refusal of a sibling's reservation meanwhile is busy", async () => {
    const fixture = await setupSharded(SHARDS);
    const other = crypto.randomUUID();
    expect((await post(`/v1/lanes/${other}/jobs`, { id: "c1", kind: PULL_KIND, payload: {} })).status).toBe(201);
    const [X, S] = [0, 1];
    const { id, qa } = setting(X, S, S);
    const reserved = await fixture.shard(X).reserve(id, S, qa, null);
    const nonce = reserved.ok && reserved.value.status === "new" ? reserved.value.nonce! : "";
    expect(nonce).not.toBe("");
    const refusal = await runInDurableObject(fixture.shard(S), async (lane: Lane) => {
      const { enqueue } = (lane as unknown as { parts: LaneParts }).parts;
      const jobs = [
        { kind: PULL_KIND, payload: {}, queue: keyOn(S, SHARDS, "qd"), dependsOn: [{ lane: other, id: "c1" }] },
        { id, kind: PULL_KIND, payload: {}, queue: qa, reservation: nonce },
      ];
      const written = enqueue.batch(jobs, undefined, SHARDS);
      // Another enqueue of the id, on another shard, has the batch's shard refuse its reservation now.
      const refused = (lane as unknown as { rpc: { shards: ShardRpc } }).rpc.shards.refuseReservation(id, nonce);
      const answer = await written;
      expect(answer.ok ? answer.value.map((r) => r.status) : answer.error.code).toEqual(["queued", "queued"]);
      return refused.ok ? refused.value.status : refused.error.code;
    });
    expect(refusal).toBe("busy");
    expect(await copiesOf(fixture, id)).toEqual([S]);
  });

  it("a job waiting on its dependencies to be written on its id's own shard holds the id there: a reservation of it for another shard meanwhile is busy", async () => {
    const fixture = await setupSharded(SHARDS);
    const other = crypto.randomUUID();
    expect((await post(`/v1/lanes/${other}/jobs`, { id: "c1", kind: PULL_KIND, payload: {} })).status).toBe(201);
    const [H, U] = [1, 2];
    const { id, qa, qb } = setting(H, H, U);
    const reservation = await runInDurableObject(fixture.shard(H), async (lane: Lane) => {
      const { enqueue } = (lane as unknown as { parts: LaneParts }).parts;
      const written = enqueue.batch([{ id, kind: PULL_KIND, payload: {}, queue: qa, dependsOn: [{ lane: other, id: "c1" }] }], undefined, SHARDS);
      // Another enqueue of the id, its queue on shard U, reserves the id on its own shard (this one) now.
      const reserved = (lane as unknown as { rpc: { shards: ShardRpc } }).rpc.shards.reserve(id, U, qb, null);
      const answer = await written;
      expect(answer.ok ? answer.value.map((r) => r.status) : answer.error.code).toEqual(["queued"]);
      return reserved.ok ? reserved.value.status : reserved.error.code;
    });
    expect(reservation).toBe("busy");
    // Asked again once the write is done, the id is a job here: a conflict, never a second job on U.
    const again = await fixture.shard(H).reserve(id, U, qb, null);
    expect(again.ok && again.value.status).toBe("conflict");
    expect(await copiesOf(fixture, id)).toEqual([H]);
  });
});
