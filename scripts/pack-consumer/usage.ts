// Type-checked against the packed declarations with skipLibCheck off, no Workers types and no Node
// types: what a TypeScript user of `switchyard/client` outside a Worker compiles.
import { createHttpClient, QueueError, type EnqueueRequest, type Job } from "switchyard/client";

const queue = createHttpClient({ baseUrl: "https://queue.example.com", token: "token" });

export async function send(request: EnqueueRequest, traceparent?: string): Promise<Job> {
  const { job } = await queue.lane("tenant-7").enqueue(request, traceparent === undefined ? {} : { traceparent });
  return job;
}

export const traceOf = (job: Job): string | null => job.traceparent;

export function codeOf(error: unknown): string | null {
  return error instanceof QueueError ? error.code : null;
}

// @ts-expect-error the lane class belongs to the library entry, not the client
export type { Lane } from "switchyard/client";
