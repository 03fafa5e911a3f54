/**
 * What the routing layer calls on the objects of a lane (its shards): the few lane methods it needs,
 * declared here in the layer's own terms, so that it depends on no lane class. A stub of the lane
 * class satisfies each interface, and so does the object a lane hands the router for itself (its
 * schedule fires: durable/schedules/shard-fires.ts), which answers without calling itself over RPC.
 *
 * Three widths, each the one below plus what its callers add: one enqueue's routing (`EnqueuePeer`),
 * every call about one job or one batch (`ShardPeer`), and the lane-wide fan-outs and claims (`LanePeer`).
 */
import type { AcksAnswer, BatchAnswer, FailLaneAnswer, JobPage } from "../shared/answers.js";
import type { Result } from "../shared/errors.js";
import type { HistoryAnswer } from "../shared/history.js";
import type { Counts, Job, LaneInfo, PulledJob } from "../shared/job.js";
import type { Waitpoint, WaitpointCompleted, WaitpointCreated } from "../shared/waitpoint.js";

/**
 * What a reservation answers: `new` or `same` (go on to the target, the write carrying `nonce`),
 * `conflict` (the id is a job here), `busy` (its job is being written here: ask again), or `other`
 * (reserved for another shard, under `nonce`).
 */
export type Reservation = { status: "new" | "same"; nonce: string | null } | { status: "conflict" } | { status: "busy" } | { status: "other"; shard: number; nonce: string };

/** What a shard answers when asked to refuse a reservation: its job is here (`job`), it is written nowhere and never will be under that nonce (`refused`), or it is being written now (`busy`: ask again). */
export type Refusal = { status: "job" | "refused" | "busy" };

/**
 * What a key's own shard answers: `new` or `same` (write on the target, carrying `nonce`), or `other`
 * (its queued job may be on `shard`: that shard hands it over or gives up `nonce`; null: the key's own shard itself).
 */
export type KeyReservation = { status: "new" | "same"; nonce: string | null } | { status: "other"; shard: number; nonce: string | null };

/** What a shard answers a hand-over of a key: it kept no queued job of it (nonce given up), a move of its own was finished first or a job of the key is being written here (ask again), or the job moved and is this. */
export type HandOver = { status: "refused" | "retry" } | { status: "moved"; id: string; job: Job | null };

/** Where an id's job is, as its id's shard knows: there (that index), another shard (its reservation), or nowhere (null). */
export type Located = { shard: number | null };

/** What a watcher is answered: whether a job was due, and the epoch to name in the next watch (a watch with a count: the count it grew to). */
export type Watched = { due: boolean; epoch: number; claimable?: number };

/** A peer's answer: a stub's promise, or the answer itself from the object a lane hands for itself. */
export type Answer<T> = Result<T> | Promise<Result<T>>;

/** What one enqueue's routing calls (shard 0 of a lane answers it in place for its own schedule fires). */
export interface EnqueuePeer {
  shardState(): Answer<{ shards: number; index: number; empty: boolean }>;
  reserve(id: string, target: number, queue: string | null, replacing?: string | null): Answer<Reservation>;
  refuseReservation(id: string, nonce: string): Answer<Refusal>;
  reserveKey(key: string, target: number, replacing?: string | null): Answer<KeyReservation>;
  handOverKey(key: string, nonce: string | null, target: number, request: object): Answer<HandOver>;
  locate(id: string): Answer<Located>;
  hasJob(id: string): Answer<boolean>;
  getJob(id: string): Answer<Job>;
}

/** What the routing of one job, one batch or a batch of acks calls. */
export interface ShardPeer extends EnqueuePeer {
  checkBatch(request: object): Promise<Result<null>>;
  enqueueBatch(request: object): Promise<Result<BatchAnswer>>;
  /** For each id: the shard its job is on or reserved for, as this shard knows (null: neither). */
  knownIds(ids: string[]): Promise<Result<(number | null)[]>>;
  acks(request: object): Promise<Result<AcksAnswer>>;
}

/** What the waitpoints' routing calls (waitpoint-routing.ts). */
export interface WaitpointPeer {
  createWaitpoint(request: object): Answer<WaitpointCreated>;
  getWaitpoint(id: string): Answer<Waitpoint>;
  completeWaitpoint(id: string, request: object): Answer<WaitpointCompleted>;
  sweepWaitpoints(request: object): Answer<{ removed: number }>;
}

/** What the lane-wide fan-outs and the claims across shards call. */
export interface LanePeer extends ShardPeer, WaitpointPeer {
  info(): Promise<Result<LaneInfo>>;
  configure(patch: object): Promise<Result<LaneInfo>>;
  listJobs(query: object): Promise<Result<JobPage>>;
  listShardPage(query: object, afterSeq: number): Promise<Result<{ jobs: Job[]; seqs: number[]; more: boolean }>>;
  counts(): Promise<Result<Counts>>;
  countsAndShards(): Promise<Result<{ counts: Counts; shards: number }>>;
  failLane(request: object): Promise<Result<FailLaneAnswer>>;
  sweep(request: unknown): Promise<Result<{ removed: number }>>;
  history(request: object): Promise<Result<HistoryAnswer>>;
  claim(request: object, hold?: string): Promise<Result<{ jobs: PulledJob[] }>>;
  due(): Promise<Result<{ oldestDueAt: number | null; epoch: number }>>;
  /** How many jobs the claim would take on this shard now, up to its `minJobs` (else `max`); claims nothing. */
  claimable(request: object): Promise<Result<{ claimable: number }>>;
  /** With `counting`, answered only when the claim `request`'s count here grows past `seen` (or at `waitMs`). */
  awaitWork(epoch: number, waitMs: number, hold: string, counting?: { request: object; seen: number }): Promise<Result<Watched>>;
  stopWatching(hold: string): Promise<Result<{ stopped: number }>>;
  abandonClaim(hold: string): Promise<Result<{ released: number }>>;
}

/** How the router names objects: a lane's namespace, or anything that hands out its peers by object name as one does. */
export interface PeerDirectory<P> {
  getByName(name: string): P;
}
