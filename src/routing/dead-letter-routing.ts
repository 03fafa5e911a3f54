/**
 * How a lane's dead-letter copies reach their dead-letter lane (docs/api.md "Dead letters"), which may
 * be sharded: a copy has no queue and no debounce key, so it routes by its id, to the id's own shard,
 * and needs no reservation. The copies of one delivery go by one call per shard, each stating the
 * count it was routed by; a shard routed by a stale count refuses its whole call (`wrong_shard`), and
 * the count is read again before the outbox's next try.
 */
import { ok, type Result } from "../shared/errors.js";
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

/** What the routing of copies calls on a shard of the dead-letter lane. */
export interface DeadLetterPeer extends EnqueuePeer {
  enqueueDeadLetters(request: { shards: number; copies: DeadLetterCopy[] }): Answer<DeadLetterAnswer[]>;
}

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
    const byShard = new Map<number, number[]>();
    copies.forEach((copy, i) => {
      const shard = shardOf(copy.id, shards);
      let list = byShard.get(shard);
      if (!list) byShard.set(shard, (list = []));
      list.push(i);
    });
    const answers = new Array<DeadLetterAnswer>(copies.length);
    const calls = [...byShard].map(async ([shard, at]) => {
      const answer = await this.stub(lane, shard).enqueueDeadLetters({ shards, copies: at.map((i) => copies[i]!) });
      if (answer.ok) at.forEach((i, k) => (answers[i] = answer.value[k]!));
      else if (shardDetails(answer) !== null) this.stale.add(lane);
      return answer;
    });
    for (const answer of await Promise.all(calls)) if (!answer.ok) return answer;
    return ok(answers);
  }
}
