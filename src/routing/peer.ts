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

/** A shard's answer to reserving an id for another shard (`new`/`same`: its nonce, none for itself). */
export type Reservation = { status: "new" | "same"; nonce: string | null } | { status: "conflict" } | { status: "busy" } | { status: "other"; shard: number; nonce: string };

/** A shard's answer to refusing a reservation: its job is here, it will never be written under that nonce, or it is being written now. */
export type Refusal = { status: "job" | "refused" | "busy" };

/** A debounce key's reservation on the key's own shard: for the asker, or held by another shard's queued job. */
export type KeyReservation = { status: "new" | "same"; nonce: string | null } | { status: "other"; shard: number; nonce: string | null };

/** A hand-over of a debounce key's queued job to the asker's shard: moved (its job, or null once delivered meanwhile), refused, or ask again. */
export type HandOver = { status: "refused" | "retry" } | { status: "moved"; id: string; job: Job | null };

/** A peer's answer: a stub's promise, or the answer itself from the object a lane hands for itself. */
export type Answer<T> = Result<T> | Promise<Result<T>>;

/** What one enqueue's routing calls (shard 0 of a lane answers it in place for its own schedule fires). */
export interface EnqueuePeer {
  shardState(): Answer<{ shards: number; index: number; empty: boolean }>;
  reserve(id: string, target: number, queue: string | null, replacing?: string | null): Answer<Reservation>;
  refuseReservation(id: string, nonce: string): Answer<Refusal>;
  reserveKey(key: string, target: number, replacing?: string | null): Answer<KeyReservation>;
  handOverKey(key: string, nonce: string | null, target: number, request: object): Answer<HandOver>;
  /** Where an id's job is, as its id's own shard knows: that shard, the shard it is reserved for, or nowhere (null). */
  locate(id: string): Answer<{ shard: number | null }>;
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

/** What the lane-wide fan-outs and the claims across shards call. */
export interface LanePeer extends ShardPeer {
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
  awaitWork(epoch: number, waitMs: number, hold: string): Promise<Result<{ due: boolean; epoch: number }>>;
  stopWatching(hold: string): Promise<Result<{ stopped: number }>>;
  abandonClaim(hold: string): Promise<Result<{ released: number }>>;
}

/** How the router names objects: a lane's namespace, or anything that hands out its peers by object name as one does. */
export interface PeerDirectory<P> {
  getByName(name: string): P;
}
