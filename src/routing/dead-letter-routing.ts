/**
 * How a lane's dead-letter copies reach their dead-letter lane (docs/api.md "Dead letters"), which may
 * be sharded: a copy has no queue and no debounce key, so it routes by its id, to the id's own shard,
 * and needs no reservation of its own. The copies of one delivery go by one call per shard, each
 * stating the count it was routed by; a shard routed by a stale count refuses its whole call
 * (`wrong_shard`), and the count is read again before the outbox's next try.
 *
 * An id reserved on its own shard for another (an enqueue of that id is being written there, or one
 * was refused and left its reservation: they outlive refused enqueues) is settled as the enqueue
 * router settles it: that shard is asked to refuse the reservation in one turn. It holds the job: the
 * id exists, which counts as the copy. It refuses: the id is taken back and the copy written on its
 * own shard. It is busy writing the job: the delivery fails, and the outbox tries again later.
 */
import { fail, ok, type Result } from "../shared/errors.js";
import { shardOf } from "../shared/shards.js";
import { EnqueueRouting, shardDetails } from "./enqueue-routing.js";
import type { Answer, EnqueuePeer } from "./peer.js";

/** One copy: its id in the dead-letter lane (`<lane>.<id>`) and its payload as JSON text. */
export interface DeadLetterCopy {
  id: string;
  payload: string;
}

/**
 * What the dead-letter lane did with one copy: written now (`created`); written before by an earlier
 * delivery of this very copy (`same`: the same payload); or another job holds its id there (`exists`:
 * a copy made of an earlier failure, or a job enqueued under that id), which stays as it is. All
 * three acknowledge the copy; the first two count it as made.
 */
export type DeadLetterAnswer = "created" | "same" | "exists";

/** A shard's answer to one copy: as the lane's, or `reserved` (its id is reserved there for another shard: the router settles it). */
export type DeadLetterShardAnswer = DeadLetterAnswer | "reserved";

/** What the routing of copies calls on a shard of the dead-letter lane. */
export interface DeadLetterPeer extends EnqueuePeer {
  enqueueDeadLetters(request: { shards: number; copies: DeadLetterCopy[] }): Answer<DeadLetterShardAnswer[]>;
}

/** How many times one delivery takes back an id reserved for another shard before it leaves the copy to the outbox's next try. */
const MAX_TAKEBACKS = 4;

export class DeadLetterRouting<P extends DeadLetterPeer> extends EnqueueRouting<P> {
  /** Lanes whose last delivery met a stale count: read again before the next. */
  private readonly stale = new Set<string>();

  /**
   * Sends `copies` to the dead-letter lane `lane`, each to its id's shard: the answers in the copies'
   * order, or the first refusal (the caller tries them all again later; a repeat changes nothing).
   */
  async send(lane: string, copies: readonly DeadLetterCopy[]): Promise<Result<DeadLetterAnswer[]>> {
    const count = await this.shards(lane, this.stale.delete(lane));
    if (!count.ok) return count;
    const shards = count.value;
    const answers = new Array<DeadLetterAnswer>(copies.length);
    let pending = copies.map((_, i) => i);
    for (let round = 0; pending.length > 0; round++) {
      if (round > MAX_TAKEBACKS) return fail("wrong_shard", `copies into lane ${lane} are contended by enqueues of their ids: try again`, { shards });
      const sent = await this.sendOnce(lane, shards, pending.map((i) => copies[i]!));
      if (!sent.ok) return sent;
      const reserved: number[] = [];
      sent.value.forEach((answer, k) => (answer === "reserved" ? reserved.push(pending[k]!) : (answers[pending[k]!] = answer)));
      pending = [];
      for (const i of reserved) {
        const taken = await this.takeBack(lane, copies[i]!.id, shards);
        if (!taken.ok) return taken;
        if (taken.value === "exists") answers[i] = "exists";
        else pending.push(i);
      }
    }
    return ok(answers);
  }

  /** One call per shard of the copies' ids: each copy's answer, or the first refusal. */
  private async sendOnce(lane: string, shards: number, copies: readonly DeadLetterCopy[]): Promise<Result<DeadLetterShardAnswer[]>> {
    const byShard = new Map<number, number[]>();
    copies.forEach((copy, i) => {
      const shard = shardOf(copy.id, shards);
      let list = byShard.get(shard);
      if (!list) byShard.set(shard, (list = []));
      list.push(i);
    });
    const answers = new Array<DeadLetterShardAnswer>(copies.length);
    const calls = [...byShard].map(async ([shard, at]) => {
      const answer = await this.stub(lane, shard).enqueueDeadLetters({ shards, copies: at.map((i) => copies[i]!) });
      if (answer.ok) at.forEach((i, k) => (answers[i] = answer.value[k]!));
      else if (shardDetails(answer) !== null) this.stale.add(lane);
      return answer;
    });
    for (const answer of await Promise.all(calls)) if (!answer.ok) return answer;
    return ok(answers);
  }

  /**
   * Takes `id` back to its own shard from the shard its reservation there names: `exists` when that
   * shard holds its job (or one was written on the id's own shard meanwhile), `free` once the
   * reservation is gone; a refusal when that shard is writing the job now (the sender tries again).
   */
  private async takeBack(lane: string, id: string, shards: number): Promise<Result<"exists" | "free">> {
    const home = shardOf(id, shards);
    let replacing: string | null = null;
    for (let tries = 0; tries < MAX_TAKEBACKS; tries++) {
      const reserved = await this.stub(lane, home).reserve(id, home, null, replacing);
      if (!reserved.ok) return reserved;
      const answer = reserved.value;
      if (answer.status === "conflict") return ok("exists");
      if (answer.status === "busy") break;
      if (answer.status !== "other") return ok("free");
      const refused = await this.stub(lane, answer.shard).refuseReservation(id, answer.nonce);
      if (!refused.ok) return refused;
      if (refused.value.status === "job") return ok("exists");
      if (refused.value.status === "busy") break;
      replacing = answer.nonce;
    }
    return fail("wrong_shard", `job id ${id} of lane ${lane} is being written by an enqueue on another shard: try again`, { shards });
  }
}
