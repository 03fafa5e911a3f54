/** What the lane answers, shared by the lane, the front worker and both clients (shared/API.md). */
import type { EnqueueStatus, Job } from "./job.js";

export type EnqueueAnswer = { status: EnqueueStatus; job: Job };
export type BatchAnswer = { results: { id: string; status: EnqueueStatus }[] };
export type JobPage = { jobs: Job[]; cursor: string | null };
export type CancelAnswer = { status: "cancelled" | "cancelling"; job: Job };
