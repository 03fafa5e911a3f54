/** What the lane answers, shared by the lane, the front worker and both clients (docs/api.md). */
import type { ErrorBody } from "./errors.js";
import type { EnqueueStatus, Job, RateLimit } from "./job.js";

/** `cancelling`: the running jobs a `singleton: "cancel-running"` enqueue asked to cancel. */
export type EnqueueAnswer = { status: EnqueueStatus; job: Job; cancelling?: string[] };
export type BatchAnswer = { results: { id: string; status: EnqueueStatus }[] };
export type JobPage = { jobs: Job[]; cursor: string | null };
export type CancelAnswer = { status: "cancelled" | "cancelling"; job: Job };
/** A queue as an operator sees it: who holds it (a completing job reports `running`), else its next job, and how many wait. */
export type QueueInfo = {
  queue: string;
  head: { id: string; state: "running" | "queued"; cancelRequested: boolean } | null;
  queued: number;
  /** The queue's jobs that hold a slot: running, or completing (their outcome is being delivered). */
  running: number;
  concurrency: number;
  rateLimit: RateLimit | null;
};
/** Failing a lane: the jobs this call settled `failed`, and whether queued or running jobs remain. */
export type FailLaneAnswer = { failed: string[]; more: boolean };
export type PurgeAnswer = { purged: number };
/** One item of a batch ack answered: applied, or refused with the code its single route would answer. */
export type AckAnswer = { id: string; ok: true } | { id: string; ok: false; error: Pick<ErrorBody, "code" | "message"> };
export type AcksAnswer = { results: AckAnswer[] };
