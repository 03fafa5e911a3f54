/**
 * The claim, in one place: which due jobs an attempt may take (pause, the lane's concurrency, queue
 * heads, priority then enqueue order, `runAt`, the page's bytes), and the one statement that leases
 * them, each with its own fresh token and the next generation. Pull consumers (`forConsumer`, held
 * claims too: waiters.ts) and the lane's own dispatcher (`take`) claim through here alike.
 */
import type { Clock, Entropy } from "../../shared/clock.js";
import { MAX_PAGE_BYTES } from "../../shared/defaults.js";
import type { ClaimedJob, PulledJob } from "../../shared/job.js";
import type { CheckpointStore } from "../steps/checkpoints.js";
import { checkpointBytes } from "../steps/checkpoints.js";
import type { Dependencies } from "../deps/dependencies.js";
import { dependencyBytes } from "../deps/dependency-bytes.js";
import { draw } from "../flow/bucket.js";
import { jobRowsAnd, toClaimedJob, type JobRow } from "../store/job-row.js";
import type { TransitionSink } from "../store/job-store.js";
import { withinBytes, type Candidate } from "../store/page.js";
import type { LaneSettingsStore } from "../store/settings.js";
import { laneRoom } from "../flow/may-start.js";
import { queuesStarted } from "../flow/starts.js";
import * as Q from "./claim-statements.js";
import { BATCH_DUE_SQL } from "./batch-statements.js";
import { keepUpkeep } from "../store/upkeep.js";

/** What a claim asks for (`Claims.take`): a page of due jobs to lease. */
export interface ClaimFilter {
  /** Only these kinds (null: any but `excludeKinds`). */
  kinds: readonly string[] | null;
  /** Never these kinds (the lane's in-process executors, when a pull consumer claims). */
  excludeKinds: readonly string[];
  /** Never these jobs (whose in-process executor, aborted, has not returned). */
  excludeIds: readonly string[];
  /** Slots taken besides running rows (aborted in-process attempts whose executor has not returned). */
  heldSlots: number;
  max: number;
  leaseMs: number;
  /** The answer's JSON budget (a page holds at most 4 MiB); Infinity when nothing is sent. */
  maxBytes: number;
  holder: "lane" | "consumer";
}

/** What a pull consumer's claim asks for (held or not): kinds (null: any), how many, how long a lease. */
export interface ClaimAsk {
  kinds: readonly string[] | null;
  max: number;
  leaseMs: number;
  /** A held claim takes nothing until this many jobs are claimable, or its wait is over (waiters.ts); absent: 1. */
  minJobs?: number;
}

/**
 * What a count of the claim `ask` up to `upTo` depends on (its kinds as a set, how far it counts; not
 * its lease): claims with one key count the same, so that one count serves them all at one moment.
 */
export function countKey(ask: ClaimAsk, upTo: number): string {
  return JSON.stringify([ask.kinds === null ? null : [...new Set(ask.kinds)].sort(), upTo]);
}

/** Counts taken at one moment, one read a key (`countKey`): claims that count the same share it until `clear` (jobs were taken). */
export class CountsOnce {
  private readonly known = new Map<string, number>();

  of(key: string, read: () => number): number {
    let n = this.known.get(key);
    if (n === undefined) this.known.set(key, (n = read()));
    return n;
  }

  clear(): void {
    this.known.clear();
  }
}

/** What the in-process side holds that a consumer's claim must leave alone. */
export interface InProcess {
  /** Kinds with an in-process executor: a pull consumer never gets one. */
  readonly kinds: readonly string[];
  /** Slots held by aborted attempts whose executor runs on. */
  heldSlots(): number;
}

export interface ClaimHost {
  lane: string;
  /** The version of the code: what every lease it takes records. */
  version: string;
  settings: LaneSettingsStore;
  /** How many jobs run: the kept count. */
  runningCount(): number;
  /** Whether any queue of the lane has a rate limit: a claim of its jobs then draws its bucket. */
  queuesMatter(): boolean;
  checkpoints: CheckpointStore;
  /** What a pull claim's jobs carry of their dependencies. */
  dependencies: Dependencies;
  transitions?: TransitionSink | undefined;
}

export class Claims {
  private readonly sql: SqlStorage;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly entropy: Entropy,
    private readonly host: ClaimHost,
  ) {
    this.sql = storage.sql;
  }

  /**
   * Claims up to `max` due jobs. `seqs` learns each claimed job's seq (the dispatcher's records find
   * rows by it); `seen.all`, whether no other due job it may claim was left (false when it could take none).
   *
   * Flow control is drawn here, in the claim's own transaction, for in-process starts and pull claims
   * alike: never more than the lane's bucket holds tokens (its draw written with the claim), and a
   * queue's jobs only as its free slots and tokens allow (its bucket and last start written too).
   */
  take(filter: ClaimFilter, seqs?: Map<string, number>, seen?: { all: boolean }): ClaimedJob[] {
    const now = this.clock.now();
    const settings = this.host.settings.read();
    const { rateLimit, bucket, fairness } = settings;
    if (settings.paused) return [];
    const limit = Math.min(filter.max, laneRoom(settings, this.host.runningCount(), filter.heldSlots, now));
    if (limit <= 0) {
      if (seen) seen.all = false;
      return [];
    }
    // Everything below runs in one synchronous stretch (nothing else runs in the object meanwhile). A
    // claim of jobs outside any queue in a lane without a rate limit is one statement, whole or not at
    // all; anything else it writes goes with it in one transaction.
    const write = () => (fairness === "round-robin" ? this.roundRobin(filter, now, limit, seen) : this.claimPage(filter, now, this.candidates(filter, now, limit), limit, seen));
    const claimed = rateLimit || fairness === "round-robin" || this.host.queuesMatter() ? this.storage.transactionSync(() => {
      const rows = write();
      if (rateLimit && rows.length > 0) this.host.settings.drawn(draw(rateLimit, bucket, now, rows.length));
      return rows;
    }) : write();
    const sink = this.host.transitions;
    const told = sink?.wanted === true;
    return claimed.map((row) => {
      // At the claim's instant (the one its bucket was drawn at), not whenever this line runs.
      if (told) sink!.record({ job: row, from: "queued", to: row.state, durationMs: null, at: now });
      seqs?.set(row.id, row.seq);
      return toClaimedJob(row, this.host.lane);
    });
  }

  /** Leases a page of the candidates (within the answer's bytes), and writes what their queues owe. */
  private claimPage(filter: ClaimFilter, now: number, candidates: Candidate[], limit: number, seen?: { all: boolean }): JobRow[] {
    // A pull claim's answer carries the jobs' checkpoints and dependencies too; an in-process claim sends nothing.
    const seqs = filter.maxBytes === Infinity ? null : candidates.map((c) => c.seq);
    const extra = seqs && checkpointBytes(this.sql, seqs);
    const deps = seqs && dependencyBytes(this.sql, seqs);
    const page = withinBytes(extra && deps ? candidates.map((c) => ({ ...c, bytes: c.bytes + (extra.get(c.seq) ?? 0) + (deps.get(c.seq) ?? 0) })) : candidates, filter.maxBytes);
    // Fewer than it could take: every due head it may claim is in this page (the dispatcher keeps that).
    if (seen) seen.all = candidates.length < limit;
    if (page.length === 0) return [];
    // One statement for all of them, each with its own token; answered in the candidates' order.
    const leases = page.map(({ seq }) => [seq, this.entropy.token()] as const);
    const order = new Map(page.map(({ seq }, i) => [seq, i]));
    const list = JSON.stringify(leases);
    const answered = jobRowsAnd<number>(this.sql.exec(Q.CLAIM_SQL, list, now + filter.leaseMs, filter.holder, now, this.host.version))
      .sort(([a], [b]) => order.get(a.seq)! - order.get(b.seq)!);
    const rows = answered.map(([row]) => row);
    // Only a queued row is claimed (its WHERE), and only one that is due, so never a blocked one. Its
    // wait ran from when it was last queued, which the claim overwrote: the claim answered it (`wait_from`).
    keepUpkeep(this.sql, answered.map(([row, waitFrom]) => ({
      old: {
        state: "queued", outcome: null, kind: row.kind, queue: row.queue, blocked: 0, run_at: row.run_at, updated_at: waitFrom,
        claimed_at: null, created_at: row.created_at, attempt_end: row.attempt_end, lease_token: null,
      },
      new: row,
    })), now);
    queuesStarted(this.sql, this.host.settings, () => this.host.queuesMatter(), rows, now);
    return rows;
  }

  /**
   * Round-robin: rounds of one claimable job per queue (the queues that started least recently
   * first), each round leased before the next is read, so that a queue that just started goes to the
   * back; until the limit, or a round finds nothing.
   */
  private roundRobin(filter: ClaimFilter, now: number, limit: number, seen?: { all: boolean }): JobRow[] {
    const kinds = filter.kinds === null ? filter.excludeKinds : [...new Set(filter.kinds)].filter((k) => !filter.excludeKinds.includes(k));
    if (filter.kinds !== null && kinds.length === 0) return [];
    const taking = filter.kinds === null ? 0 : 1;
    const claimed: JobRow[] = [];
    const round = { all: true };
    // One priority among the queued jobs (the common case): the walk over the queues may stop early.
    const statement = this.sql.exec<{ one: number }>(Q.ONE_PRIORITY_SQL).one().one === 1 ? Q.CLAIM_ROUND_ROBIN_ONE_PRIORITY_SQL : Q.CLAIM_ROUND_ROBIN_SQL;
    while (claimed.length < limit) {
      const left = limit - claimed.length;
      const candidates = this.sql.exec<Candidate>(statement, now, JSON.stringify(kinds), JSON.stringify(filter.excludeIds), left, taking).toArray();
      const rows = this.claimPage(filter, now, candidates, left, round);
      claimed.push(...rows);
      if (rows.length === 0) break;
    }
    if (seen) seen.all = claimed.length < limit && round.all;
    return claimed;
  }

  /** A pull consumer's claim: kinds without an in-process executor, with their checkpoints and dependencies, at most 4 MiB of jobs. */
  forConsumer(ask: ClaimAsk, inProcess: InProcess): PulledJob[] {
    const seqs = new Map<string, number>();
    const jobs = this.take({
      kinds: ask.kinds,
      excludeKinds: inProcess.kinds,
      excludeIds: [],
      heldSlots: inProcess.heldSlots(),
      max: ask.max,
      leaseMs: ask.leaseMs,
      maxBytes: MAX_PAGE_BYTES,
      holder: "consumer",
    }, seqs);
    return this.host.dependencies.attach(this.host.checkpoints.attach(jobs), seqs);
  }

  /**
   * A batch kind's claimable due jobs, at most `limit`: how many, and the oldest `runAt` among them
   * (null: none). The dispatcher's batch start and the wake's batch term read it alike.
   */
  batchDue(kind: string, limit: number, excludeIds: readonly string[]): { due: number; oldest: number | null } {
    return this.sql.exec<{ due: number; oldest: number | null }>(BATCH_DUE_SQL, this.clock.now(), kind, JSON.stringify(excludeIds), limit).one();
  }

  /**
   * How many jobs a pull consumer's claim would take now, counted up to `upTo` (a held claim's
   * `minJobs`): the due heads its kinds allow, no more than the lane's room. Reads only.
   */
  claimableCount(ask: ClaimAsk, inProcess: InProcess, upTo: number): number {
    const now = this.clock.now();
    const settings = this.host.settings.read();
    if (settings.paused) return 0;
    const room = Math.min(upTo, laneRoom(settings, this.host.runningCount(), inProcess.heldSlots(), now));
    if (room <= 0) return 0;
    const filter = { kinds: ask.kinds, excludeKinds: inProcess.kinds, excludeIds: [] } as const;
    return this.candidates(filter, now, room).length;
  }

  /** The best `limit` due heads the filter allows, in one statement. */
  private candidates(filter: Pick<ClaimFilter, "kinds" | "excludeKinds" | "excludeIds">, now: number, limit: number): Candidate[] {
    const excludeIds = JSON.stringify(filter.excludeIds);
    if (filter.kinds === null) return this.sql.exec<Candidate>(Q.CLAIM_CANDIDATES_SQL, now, JSON.stringify(filter.excludeKinds), excludeIds, limit).toArray();
    const kinds = [...new Set(filter.kinds)].filter((k) => !filter.excludeKinds.includes(k));
    if (kinds.length === 0) return [];
    return this.sql.exec<Candidate>(Q.CLAIM_KINDS_CANDIDATES_SQL, now, excludeIds, limit, JSON.stringify(kinds)).toArray();
  }
}
