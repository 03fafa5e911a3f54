/**
 * How a caller reaches the shards of a lane (docs/concepts.md "Sharded lanes"), second part: the
 * routing of a batch, of a call about one job (by its id, or by its lease token), of batch acks, and
 * of a queue's calls, on top of the count cache and one enqueue's routing (enqueue-routing.ts).
 */
import type { AcksAnswer, BatchAnswer } from "../shared/answers.js";
import { fail, ok, type Result } from "../shared/errors.js";
import type { AckItem, EnqueueRequest } from "../shared/schemas.js";
import { routingKey, shardOf, shardOfToken } from "../shared/shards.js";
import { dependencyWaves, missingDependencies } from "./batch-dependencies.js";
import { handOverBatchKeys, reserveBatchKeys } from "./batch-keys.js";
import { EnqueueRouting, MAX_REROUTES, newIdOn, shardDetails } from "./enqueue-routing.js";
import type { ShardPeer } from "./peer.js";
import { wholeBatchRefusal } from "../shared/kinds.js";

/** Batches, calls by id or token, acks and queues, on top of one enqueue's routing. */
export class JobRouting<P extends ShardPeer> extends EnqueueRouting<P> {
  // ---- batch ----

  /**
   * A batch, all or nothing: on a sharded lane its jobs are routed and their ids reserved first, then
   * every shard checks its part (`checkBatch`: bad input, conflicts) before any shard writes; the
   * answers come back in request order.
   */
  async enqueueBatch(lane: string, batch: { jobs: EnqueueRequest[]; traceparent?: string }): Promise<Result<BatchAnswer>> {
    let count = await this.shards(lane);
    for (let attempt = 0; ; attempt++) {
      if (!count.ok) return count;
      const shards = count.value;
      const answer = shards === 1 ? await this.stub(lane, 0).enqueueBatch(batch) : await this.shardedBatch(lane, batch, shards);
      if (answer.ok || shardDetails(answer) === null || attempt >= MAX_REROUTES) return answer;
      count = await this.shards(lane, true);
    }
  }

  private async shardedBatch(lane: string, batch: { jobs: EnqueueRequest[]; traceparent?: string }, shards: number): Promise<Result<BatchAnswer>> {
    const parts = new Map<number, { jobs: EnqueueRequest[]; at: number[]; reservations: (string | null)[] }>();
    const routed = batch.jobs.map((job) => {
      const key = routingKey(job);
      const id = job.id ?? (key === null ? crypto.randomUUID() : undefined);
      const target = shardOf(key ?? id!, shards);
      return { job: { ...job, id: id ?? newIdOn(target, shards) }, target };
    });
    for (const [i, { job, target }] of routed.entries()) {
      const reserved = batch.jobs[i]!.id === undefined ? ok(null) : await this.reserve(lane, job.id, target, job.queue ?? null, shards);
      if (!reserved.ok) return reserved.error.code === "job_conflict" ? fail("job_conflict", reserved.error.message, { ids: [job.id] }) : reserved;
      const part = parts.get(target) ?? { jobs: [], at: [], reservations: [] };
      part.jobs.push(job);
      part.at.push(i);
      part.reservations.push(reserved.value);
      parts.set(target, part);
    }
    const keys = await reserveBatchKeys(this, lane, routed, batch.jobs, shards);
    if (!keys.ok) return keys;
    const traced = batch.traceparent === undefined ? {} : { traceparent: batch.traceparent };
    const nonces = new Map<number, string | null>();
    for (const part of parts.values()) part.at.forEach((i, k) => nonces.set(i, part.reservations[k]!));
    const keyNonces = keys.value.nonces;
    const reserved = (at: number[]) => ({
      ...(at.some((i) => nonces.get(i) !== null) ? { reservations: at.map((i) => nonces.get(i)!) } : {}),
      ...(at.some((i) => keyNonces.has(i)) ? { keyReservations: at.map((i) => keyNonces.get(i) ?? null) } : {}),
    });
    const calls = [...parts.entries()].map(([shard, part]) => ({ shard, part, request: { jobs: part.jobs, shards, ...reserved(part.at), ...traced } }));
    const checks = await Promise.all(calls.map(({ shard, request }) => this.stub(lane, shard).checkBatch(request)));
    const refused = checks.find((c) => !c.ok);
    // Payloads refused by their shards name the items of each shard's part: the batch's numbering, every shard's issues.
    if (refused && !refused.ok && refused.error.code === "invalid_payload") {
      return { ok: false, error: wholeBatchRefusal(checks.flatMap((c, i) => (!c.ok && c.error.code === "invalid_payload" ? [{ error: c.error, at: calls[i]!.part.at }] : []))) };
    }
    if (refused) return refused as Result<never>;
    const waves = dependencyWaves(lane, routed);
    if (!waves.ok) return waves;
    if (waves.value !== null) {
      const missing = await missingDependencies(this, lane, routed);
      if (missing !== null) return missing;
    }
    const results: BatchAnswer["results"] = new Array(batch.jobs.length);
    const handed = await handOverBatchKeys(this, lane, routed, keys.value, shards);
    if (!handed.ok) return handed;
    for (const [i, result] of handed.value) results[i] = result;
    // Without dependencies between shards, one wave: every shard's part at once. With them, a job goes
    // in a wave after the jobs of other shards it waits for, so that they exist when it registers.
    const everyPart = calls.map(({ shard, part }) => ({ shard, at: part.at }));
    for (const whole of waves.value ?? [everyPart]) {
      const wave = whole.map(({ shard, at }) => ({ shard, at: at.filter((i) => !handed.value.has(i)) })).filter(({ at }) => at.length > 0);
      const written = await Promise.all(wave.map(({ shard, at }) => this.stub(lane, shard).enqueueBatch({ jobs: at.map((i) => routed[i]!.job), shards, ...reserved(at), ...traced })));
      for (const [n, answer] of written.entries()) {
        // A shard that refuses now was raced by another enqueue since its check: the refusal is the answer.
        if (!answer.ok) return answer;
        answer.value.results.forEach((result, k) => (results[wave[n]!.at[k]!] = result));
      }
    }
    return ok({ results });
  }

  // ---- by id, by token ----

  /**
   * A route that names a job by id: on a sharded lane, the id's own shard answers, or says which shard
   * its job is reserved for; a job nowhere is answered by the id's own shard (its own 404).
   */
  async byId<T>(lane: string, id: string, call: (stub: P) => Promise<Result<T>>): Promise<Result<T>> {
    const count = await this.shards(lane);
    if (!count.ok) return count;
    if (count.value === 1) {
      const answer = await call(this.stub(lane, 0));
      if (answer.ok || answer.error.code !== "job_not_found") return answer;
      // Not here: unless the lane was resharded since the count was read.
      const fresh = await this.shards(lane, true);
      if (!fresh.ok || fresh.value === 1) return answer;
      return this.located(lane, id, fresh.value, call);
    }
    return this.located(lane, id, count.value, call);
  }

  private async located<T>(lane: string, id: string, shards: number, call: (stub: P) => Promise<Result<T>>): Promise<Result<T>> {
    const home = shardOf(id, shards);
    const answer = await call(this.stub(lane, home));
    if (answer.ok || answer.error.code !== "job_not_found") return answer;
    const where = await this.stub(lane, home).locate(id);
    if (!where.ok) return where;
    const shard = where.value.shard;
    return shard === null || shard === home ? answer : call(this.stub(lane, shard));
  }

  /**
   * A fenced write: its lease token names the shard that minted it (`s<i>.`; none: shard 0). A token
   * that finds no job there (a forged or garbled one) goes by the job's id, whose shard answers the
   * fence's refusal as one lane would.
   */
  async byToken<T>(lane: string, id: string, token: string, call: (stub: P) => Promise<Result<T>>): Promise<Result<T>> {
    const count = await this.shards(lane);
    if (!count.ok) return count;
    if (count.value === 1) return this.byId(lane, id, call);
    const shard = shardOfToken(token, count.value);
    const answer = await call(this.stub(lane, shard));
    if (answer.ok || answer.error.code !== "job_not_found") return answer;
    const home = shardOf(id, count.value);
    if (home === shard) {
      const where = await this.stub(lane, home).locate(id);
      if (!where.ok || where.value.shard === null || where.value.shard === shard) return answer;
      return call(this.stub(lane, where.value.shard));
    }
    return this.located(lane, id, count.value, call);
  }

  /** Batch acks: grouped by the shard of each token, answered in request order. */
  async acks(lane: string, request: { acks: AckItem[] }): Promise<Result<AcksAnswer>> {
    const count = await this.shards(lane);
    if (!count.ok) return count;
    if (count.value === 1) return this.stub(lane, 0).acks(request);
    const groups = new Map<number, { acks: AckItem[]; at: number[] }>();
    request.acks.forEach((ack, i) => {
      const shard = shardOfToken(ack.token, count.value);
      const group = groups.get(shard) ?? { acks: [], at: [] };
      group.acks.push(ack);
      group.at.push(i);
      groups.set(shard, group);
    });
    const answers = await Promise.all([...groups.entries()].map(async ([shard, group]) => ({ group, answer: await this.stub(lane, shard).acks({ acks: group.acks }) })));
    const results: AcksAnswer["results"] = new Array(request.acks.length);
    for (const { group, answer } of answers) {
      if (!answer.ok) return answer;
      answer.value.results.forEach((result, k) => (results[group.at[k]!] = result));
    }
    // An item its token's shard did not find goes by its job's id (a forged token: the fence's refusal there).
    await Promise.all(
      results.map(async (result, i) => {
        if (result.ok || result.error.code !== "job_not_found") return;
        const ack = request.acks[i]!;
        const again = await this.byId(lane, ack.id, (stub) => stub.acks({ acks: [ack] }));
        if (again.ok) results[i] = again.value.results[0]!;
      }),
    );
    return ok({ results });
  }

  /** A queue's routes: its shard (the count read afresh: a queue's settings must reach the shard that holds its jobs). */
  async byQueue<T>(lane: string, queue: string, call: (stub: P) => Promise<Result<T>>): Promise<Result<T>> {
    const count = await this.shards(lane, true);
    if (!count.ok) return count;
    return call(this.stub(lane, shardOf(queue, count.value)));
  }
}
