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
import { jobRows, toClaimedJob } from "../store/job-row.js";
import type { TransitionSink } from "../store/job-store.js";
import { withinBytes, type Candidate } from "../store/page.js";
import type { LaneSettingsStore } from "../store/settings.js";
import * as Q from "./claim-statements.js";

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
  checkpoints: CheckpointStore;
  transitions?: TransitionSink | undefined;
}

export class Claims {
  private readonly sql: SqlStorage;

  constructor(
    storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly entropy: Entropy,
    private readonly host: ClaimHost,
  ) {
    this.sql = storage.sql;
  }

  /**
   * Claims up to `max` due jobs. `seqs` learns each claimed job's seq (the dispatcher's records find
   * rows by it); `seen.all`, whether no other due job it may claim was left (false when it could take none).
   */
  take(filter: ClaimFilter, seqs?: Map<string, number>, seen?: { all: boolean }): ClaimedJob[] {
    const now = this.clock.now();
    // No transaction: everything below runs in one synchronous stretch (nothing else runs in the object
    // meanwhile), the reads change nothing, and the claim is one statement, whole or not at all.
    const { concurrency, paused } = this.host.settings.read();
    if (paused) return [];
    const free = concurrency - this.host.runningCount() - filter.heldSlots;
    const limit = Math.min(filter.max, free);
    if (limit <= 0) return [];
    const candidates = this.candidates(filter, now, limit);
    // A pull claim's answer carries the jobs' checkpoints too; an in-process claim sends nothing.
    const extra = filter.maxBytes === Infinity ? null : checkpointBytes(this.sql, candidates.map((c) => c.seq));
    const page = withinBytes(extra ? candidates.map((c) => ({ ...c, bytes: c.bytes + (extra.get(c.seq) ?? 0) })) : candidates, filter.maxBytes);
    // Fewer than it could take: every due head it may claim is in this page (the dispatcher keeps that).
    if (seen) seen.all = candidates.length < limit;
    if (page.length === 0) return [];
    // One statement for all of them, each with its own token; answered in the candidates' order.
    const leases = page.map(({ seq }) => [seq, this.entropy.token()] as const);
    const order = new Map(page.map(({ seq }, i) => [seq, i]));
    const rows = jobRows(this.sql.exec(Q.CLAIM_SQL, JSON.stringify(leases), now + filter.leaseMs, filter.holder, now, this.host.version))
      .sort((a, b) => order.get(a.seq)! - order.get(b.seq)!);
    const sink = this.host.transitions;
    const told = sink?.wanted === true;
    return rows.map((row) => {
      if (told) sink!.record({ job: row, from: "queued", to: row.state, durationMs: null });
      seqs?.set(row.id, row.seq);
      return toClaimedJob(row, this.host.lane);
    });
  }

  /** A pull consumer's claim: kinds without an in-process executor, with their checkpoints, at most 4 MiB of jobs. */
  forConsumer(ask: ClaimAsk, inProcess: InProcess): PulledJob[] {
    return this.host.checkpoints.attach(this.take({
      kinds: ask.kinds,
      excludeKinds: inProcess.kinds,
      excludeIds: [],
      heldSlots: inProcess.heldSlots(),
      max: ask.max,
      leaseMs: ask.leaseMs,
      maxBytes: MAX_PAGE_BYTES,
      holder: "consumer",
    }));
  }

  /** The best `limit` due heads the filter allows, in one statement. */
  private candidates(filter: ClaimFilter, now: number, limit: number): Candidate[] {
    const excludeIds = JSON.stringify(filter.excludeIds);
    if (filter.kinds === null) return this.sql.exec<Candidate>(Q.CLAIM_CANDIDATES_SQL, now, JSON.stringify(filter.excludeKinds), excludeIds, limit).toArray();
    const kinds = [...new Set(filter.kinds)].filter((k) => !filter.excludeKinds.includes(k));
    if (kinds.length === 0) return [];
    return this.sql.exec<Candidate>(Q.CLAIM_KINDS_CANDIDATES_SQL, now, excludeIds, limit, JSON.stringify(kinds)).toArray();
  }
}
