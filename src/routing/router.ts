/**
 * How a caller reaches the shards of a lane (docs/concepts.md "Sharded lanes"): the front worker and
 * the RPC client both go through `ShardRouter`, which is the count cache and one enqueue's routing
 * (enqueue-routing.ts), the routing of batches and of calls about one job (job-routing.ts), the
 * lane-wide fan-outs and merges (lane-wide-routing.ts), and, here, claims across shards. A lane's own
 * schedule fires use one enqueue's routing alone (durable/schedules/shard-fires.ts), and its
 * dependency registrations the hops of registrations.ts.
 */
import { ok, type Result } from "../shared/errors.js";
import type { PulledJob } from "../shared/job.js";
import { LaneWideRouting } from "./lane-wide-routing.js";
import { acrossResets } from "./lane-retry.js";
import type { LanePeer } from "./peer.js";
import { gather, gathers, type ClaimOfShards } from "./held-min-jobs.js";
import { ShardWatches } from "./shard-watches.js";

/**
 * How long a sharded lane's claims go first to the shard that last gave the most jobs, before they
 * look at every shard again: a claim with work in one shard of many costs one call, and no shard's
 * due jobs wait longer than this for a look while another shard keeps a router busy.
 */
export const CLAIM_LOOK_EVERY_MS = 100;

export class ShardRouter<P extends LanePeer> extends LaneWideRouting<P> {
  /** Per sharded lane: the shard its claims go to first, and when every shard was last looked at. */
  private readonly hot = new Map<string, { shard: number; lookedAt: number }>();

  /**
   * A claim. One shard: its claim, as before. Sharded: the shard that gave the most at the last look
   * first (for `CLAIM_LOOK_EVERY_MS` after that look); short of `max`, a look at every shard (`due`),
   * then claims from those with due work, the longest-waiting first, while short of `max`. A held claim with nothing
   * claimed waits on every shard at once (`awaitWork`, which claims nothing) and claims from the
   * shard that wakes it, until its `waitMs` is spent: no job is ever claimed to be given back. A held
   * claim with `minJobs` counts across the shards first (held-min-jobs.ts). Every claim a held claim
   * sends carries its hold's name, so that a client that leaves has what any of them took released
   * (`abandonClaim`), and a shard told first claims nothing for it.
   */
  async claim(lane: string, request: ClaimOfShards, hold: string | null, signal?: AbortSignal): Promise<Result<{ jobs: PulledJob[] }>> {
    const count = await this.shards(lane);
    if (!count.ok) return count;
    const shards = count.value;
    if (shards === 1) {
      if (hold === null) return this.stub(lane, 0).claim(request);
      // Held, it is asked again after a reset of the lane, with what is left of its wait: what the
      // lost instance held claimed nothing, and jobs it claimed for an answer lost on the reset stay
      // leased until their lease runs out, then are recovered (queued again).
      const until = Date.now() + (request.waitMs ?? 0);
      return acrossResets(() => this.stub(lane, 0).claim({ ...request, waitMs: Math.max(0, until - Date.now()) }, hold), signal);
    }
    if (gathers(request)) return gather(this, lane, shards, request, hold, signal);
    const max = request.max ?? 1;
    const now = { ...request, waitMs: 0 };
    const claimOn = (shard: number, upTo: number) => this.stub(lane, shard).claim({ ...now, max: upTo }, hold ?? undefined);
    const jobs: PulledJob[] = [];
    const hot = this.hot.get(lane);
    if (hot && hot.shard < shards && Date.now() - hot.lookedAt < CLAIM_LOOK_EVERY_MS) {
      const claimed = await claimOn(hot.shard, max);
      if (!claimed.ok) return claimed;
      if (claimed.value.jobs.length === max) return claimed;
      jobs.push(...claimed.value.jobs);
    }
    const looks = await Promise.all(Array.from({ length: shards }, (_, i) => this.stub(lane, i).due()));
    for (const look of looks) if (!look.ok) return look;
    const due = looks.map((look, shard) => ({ shard, ...(look as { value: { oldestDueAt: number | null; epoch: number } }).value }));
    let most = { shard: -1, jobs: 0 };
    for (const { shard } of due.filter((d) => d.oldestDueAt !== null).sort((a, b) => a.oldestDueAt! - b.oldestDueAt!)) {
      // Its client gone, it claims no more (what it took is released by the lane's abandonClaim).
      if (jobs.length >= max || signal?.aborted) break;
      const claimed = await claimOn(shard, max - jobs.length);
      if (!claimed.ok) return claimed;
      jobs.push(...claimed.value.jobs);
      if (claimed.value.jobs.length > most.jobs) most = { shard, jobs: claimed.value.jobs.length };
    }
    if (most.shard >= 0) this.hot.set(lane, { shard: most.shard, lookedAt: Date.now() });
    else this.hot.delete(lane);
    const waitMs = request.waitMs ?? 0;
    if (jobs.length > 0 || waitMs === 0) return ok({ jobs });
    const deadline = Date.now() + waitMs;
    const name = hold ?? crypto.randomUUID();
    const watches = new ShardWatches((shard) => this.stub(lane, shard), deadline, name, signal);
    try {
      for (const d of due) watches.watch(d.shard, d.epoch);
      while (Date.now() < deadline && !signal?.aborted) {
        const woken = await watches.next();
        if (woken === null) break;
        if (woken.due) {
          const claimed = await claimOn(woken.shard, max);
          if (!claimed.ok) return claimed;
          if (claimed.value.jobs.length > 0) return ok({ jobs: claimed.value.jobs });
        }
        if (Date.now() < deadline) watches.watch(woken.shard, woken.epoch);
      }
      return ok({ jobs: [] });
    } finally {
      await watches.stop();
    }
  }

  /**
   * A held claim (held as `hold`) whose caller went away: dropped, and what it was just given
   * released. A lane of one shard holds the claim itself (its shard 0). On a sharded lane the router
   * stops its watches on the caller's signal, and every claim it sent carries the hold's name: every
   * shard is told, releases what it gave under that name, and, if the claim has not reached it yet,
   * claims nothing for it when it comes.
   */
  async abandonClaim(lane: string, hold: string): Promise<Result<{ released: number }>> {
    const count = await this.shards(lane);
    if (!count.ok) return count;
    const answers = await Promise.all(Array.from({ length: count.value }, (_, i) => this.stub(lane, i).abandonClaim(hold)));
    let released = 0;
    for (const answer of answers) {
      if (!answer.ok) return answer;
      released += answer.value.released;
    }
    return ok({ released });
  }
}
