/**
 * "May this queued job start now", in one place: the claim (attempts/claim-statements.ts, fifo and
 * round-robin, in-process and pull alike) and the wake (wake/reads.ts) are built from these pieces
 * and no others. Were they to disagree, the wake would name a job the claim never takes, and the
 * alarm would fire at "now" again and again while the job waits for good. The lane's own part
 * (pause, free slots, its own bucket) is `laneRoom`, and what lets a job start in its enqueue's turn
 * (enqueue/enqueue.ts) `startsAtOnce` and `newJobMayStart`; the rows' part (TTL, a queue's slots and tokens, its
 * order) is `isClaimable`; round-robin's per-queue read is `queueCandidate`, which finds a job
 * exactly when `isClaimable` holds of one. `now` is always ?1.
 */
import { MAX_CONCURRENCY } from "../../shared/defaults.js";
import type { Fairness, RateLimit } from "../../shared/job.js";
import { QUEUE_BUCKET, bucketTokensSql, tokensAt, type BucketState } from "./bucket.js";

/** A job of expiry `expiresAt` and start count `generation` has not expired at `now` (a TTL holds until the first start). */
const unexpired = (expiresAt: string, generation: string, now: string) => `(${expiresAt} IS NULL OR ${generation} > 0 OR ${expiresAt} > ${now})`;

/** How many more jobs the lane may run now: none while paused, else its concurrency less what runs and the slots held besides. */
export function laneFreeSlots(settings: { concurrency: number; paused: boolean }, running: number, heldSlots: number): number {
  return settings.paused ? 0 : settings.concurrency - running - heldSlots;
}

/** How many jobs the lane lets start now: its free slots, and no more than its own bucket's whole tokens. */
export function laneRoom(
  settings: { concurrency: number; paused: boolean; rateLimit: RateLimit | null; bucket: BucketState },
  running: number,
  heldSlots: number,
  now: number,
): number {
  const free = laneFreeSlots(settings, running, heldSlots);
  return settings.rateLimit && free > 0 ? Math.min(free, tokensAt(settings.rateLimit, settings.bucket, now)) : free;
}

/**
 * Whether the lane lets a job start in its enqueue's turn (start-at-once), by its settings: not
 * paused, and neither a bucket of its own (drawn by the claim alone) nor round-robin (which orders
 * starts in the claim). The rest is the insert's own condition, `newJobMayStart`.
 */
export function startsAtOnce(settings: { paused: boolean; rateLimit: RateLimit | null; fairness: Fairness }): boolean {
  return !settings.paused && settings.rateLimit === null && settings.fairness === "fifo";
}

/** `laneFreeSlots` > 0 of a lane not paused, in SQL: the slots held besides running rows and the concurrency as given (parameters). */
const laneHasSlot = (heldSlots: string, concurrency: string) => `(SELECT running FROM lane_counts WHERE id = 1) + ${heldSlots} < ${concurrency}`;

/**
 * A new job (never started) may be inserted running now, in a lane `startsAtOnce` allows: a slot
 * free, and its TTL not passed (a runAt in the past can have spent it): what the claim would ask of
 * it. Its expiry, the slots held besides running rows, the concurrency and now, as given (parameters).
 */
export const newJobMayStart = (p: { expiresAt: string; heldSlots: string; concurrency: string; now: string }) =>
  `${laneHasSlot(p.heldSlots, p.concurrency)} AND ${unexpired(p.expiresAt, "0", p.now)}`;

/** The whole tokens of queue `q`'s bucket at ?1 (now): bucket.ts's formula. */
const queueTokens = (q: string) => bucketTokensSql(QUEUE_BUCKET(q));

/** Queue `q` (a `queues` row) may start one more job now: a free slot (`active`: its running and completing jobs, kept), and a token when rate limited. */
const queueHasRoom = (q: string) => `${q}.active < ${q}.concurrency AND (${q}.rate_limit IS NULL OR ${queueTokens(q)} >= 1)`;

/** How many of queue `q`'s first queued jobs may start now: its free slots, and no more than its tokens. */
const queueRoom = (q: string) => `MIN(${q}.concurrency - ${q}.active, CASE WHEN ${q}.rate_limit IS NULL THEN ${MAX_CONCURRENCY} ELSE ${queueTokens(q)} END)`;

/** Job `j` has not expired (a TTL holds until the first start). */
export const notExpired = (j: string) => unexpired(`${j}.expires_at`, `${j}.generation`, "?1");

/** The queued jobs of `j`'s queue ahead of it: higher priority, or as high and enqueued earlier. */
const ahead = (j: string) => `h.queue = ${j}.queue AND h.state = 'queued' AND (h.priority > ${j}.priority OR (h.priority = ${j}.priority AND h.seq < ${j}.seq))`;

/**
 * A queued job `j` may start now when it has not expired and, in a queue, when the queue has room
 * and `j` is among the queue's first jobs that its room allows: its head for a serial queue
 * (concurrency 1), else one of the first `concurrency - active` (and no more than the tokens) in
 * queue order. Every queued job counts as ahead, due or not: a queue keeps its order. A completing
 * job holds its slot until its outcome is delivered, so a serial queue's outcomes are delivered in
 * order. Every queue with queued jobs has its row (the upkeep of its counts makes it). Ahead of a
 * queue's later job are at least as many as of an earlier one: if a job may not start, no later job
 * of its queue may either (`queueCandidate` relies on it).
 */
export const isClaimable = (j: string) => `${notExpired(j)} AND (${j}.queue IS NULL OR EXISTS (
  SELECT 1 FROM queues q WHERE q.name = ${j}.queue AND ${queueHasRoom("q")}
    AND CASE WHEN q.concurrency = 1 THEN NOT EXISTS (SELECT 1 FROM jobs h WHERE ${ahead(j)})
      ELSE (SELECT COUNT(*) FROM (SELECT 1 FROM jobs h WHERE ${ahead(j)} LIMIT ${MAX_CONCURRENCY}))
        < ${queueRoom("q")} END))`;

/** `isClaimable` of a job aliased `j`, as most statements name it. */
export const IS_CLAIMABLE = isClaimable("j");

/**
 * How far into a queue round-robin reads for its candidate, by the queue's room: a window at least
 * as long as the room, so that no job that may start is behind it, and not much longer (SQLite
 * takes no column in a LIMIT, hence steps). A serial queue reads its head only; no queue reads
 * beyond `MAX_CONCURRENCY` (behind that many, no job may start).
 */
const WINDOWS = [1, 4, 16, 64, 256, MAX_CONCURRENCY] as const;

/**
 * The seq of the job round-robin takes of queue `q` (a `queues` row), or NULL: none while the queue
 * has no room, else the first of its queued jobs, in queue order, that the claimer could take at all
 * (`takes` of the job aliased `w`: due, of a kind it takes, not excluded, not expired). Whether that
 * one may start is `isClaimable`, which the caller asks: if it may not, no later job of the queue
 * may either. So a queue yields a job exactly when `isClaimable` holds of one the claimer takes,
 * whatever number of jobs that may not start now (not yet due, blocked, of another kind) are ahead.
 */
export function queueCandidate(q: string, takes: (w: string) => string): string {
  const within = (rows: number) => `(SELECT w.seq FROM (SELECT * FROM jobs w WHERE w.queue = ${q}.name AND w.state = 'queued'
      ORDER BY w.priority DESC, w.seq LIMIT ${rows}) AS w WHERE ${takes("w")} LIMIT 1)`;
  const steps = WINDOWS.slice(0, -1).map((rows) => `WHEN ${queueRoom(q)} <= ${rows} THEN ${within(rows)}`).join("\n    ");
  return `CASE WHEN NOT (${queueHasRoom(q)}) THEN NULL\n    ${steps}\n    ELSE ${within(MAX_CONCURRENCY)} END`;
}
