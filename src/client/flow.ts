/**
 * `flow()`: a parent that waits for its children (docs/api.md "Dependencies"), enqueued in as few
 * calls as the lanes allow. Children in the parent's lane go in one batch with the parent, after
 * them (all or nothing); children in other lanes go first, one batch per lane, so that they exist
 * when the parent names them. Every child gets an id (a UUID unless given), so that a flow sent
 * again with the same ids is idempotent.
 *
 * ```ts
 * await flow(client, { lane: "docs", parent: { kind: "pdf.stitch" },
 *   children: pages.map((p) => ({ kind: "page.render", payload: p })) });
 * ```
 */
import { MAX_DEPENDENCIES } from "../shared/defaults.js";
import { QueueError } from "../shared/errors.js";
import type { EnqueueStatus, JobRef } from "../shared/job.js";
import type { EnqueueRequest } from "../shared/schemas.js";
import type { LaneClient } from "./types.js";

/** A child of a flow: an enqueue request, in `lane` (default: the parent's). */
export type FlowChild = Omit<EnqueueRequest, "dependsOn" | "dependencyFailure"> & { lane?: string };

export interface FlowRequest {
  /** The parent's lane. */
  lane: string;
  /** The job that runs once its children have settled. */
  parent: Omit<EnqueueRequest, "dependsOn">;
  /** 1..100 children. */
  children: readonly FlowChild[];
  /** The producer's W3C trace context, stored on the parent and every child (`EnqueueOptions.traceparent`). */
  traceparent?: string;
}

export interface FlowAnswer {
  parent: JobRef & { status: EnqueueStatus };
  children: (JobRef & { status: EnqueueStatus })[];
}

/** Anything that hands out lane clients: the HTTP client, the RPC client. */
export interface LaneSource {
  lane(name: string): LaneClient;
}

export async function flow(source: LaneSource, request: FlowRequest): Promise<FlowAnswer> {
  const { lane, parent, children } = request;
  const options = request.traceparent === undefined ? {} : { traceparent: request.traceparent };
  if (children.length < 1 || children.length > MAX_DEPENDENCIES) {
    throw new QueueError("invalid_request", `a flow has 1..${MAX_DEPENDENCIES} children, not ${children.length}`, [{ path: ["children"], message: `1..${MAX_DEPENDENCIES} children` }]);
  }
  const named = children.map(({ lane: childLane, ...job }) => ({ lane: childLane ?? lane, job: { ...job, id: job.id ?? crypto.randomUUID() } }));
  const byLane = new Map<string, EnqueueRequest[]>();
  for (const { lane: childLane, job } of named) {
    let jobs = byLane.get(childLane);
    if (!jobs) byLane.set(childLane, (jobs = []));
    jobs.push(job);
  }
  const statuses = new Map<string, EnqueueStatus>();
  const record = (childLane: string, results: { id: string; status: EnqueueStatus }[]) => {
    for (const r of results) statuses.set(`${childLane}\u0000${r.id}`, r.status);
  };
  // Other lanes' children first: the parent's enqueue checks that each dependency exists.
  await Promise.all(
    [...byLane].filter(([childLane]) => childLane !== lane).map(async ([childLane, jobs]) => record(childLane, (await source.lane(childLane).enqueueBatch({ jobs }, options)).results)),
  );
  const own = byLane.get(lane) ?? [];
  const dependsOn = named.map((c) => ({ lane: c.lane, id: c.job.id }));
  const parentJob: EnqueueRequest = { ...parent, dependsOn };
  const batch = [...own, parentJob];
  if (parentJob.id === undefined) parentJob.id = crypto.randomUUID();
  const { results } = await source.lane(lane).enqueueBatch({ jobs: batch }, options);
  record(lane, results.slice(0, own.length));
  const parentResult = results[own.length]!;
  return {
    parent: { lane, id: parentResult.id, status: parentResult.status },
    children: named.map((c) => ({ lane: c.lane, id: c.job.id, status: statuses.get(`${c.lane}\u0000${c.job.id}`) ?? "queued" })),
  };
}
