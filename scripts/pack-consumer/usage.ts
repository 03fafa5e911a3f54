// Type-checked against the packed declarations with skipLibCheck off, no Workers types and no Node
// types: what a TypeScript user of `switchyard/client` outside a Worker compiles.
import { createHttpClient, QueueError, settledWaitpoint, type EnqueueRequest, type Job, type StreamEvent, type Waitpoint } from "switchyard/client";

const queue = createHttpClient({ baseUrl: "https://queue.example.com", token: "token" });

export async function send(request: EnqueueRequest, traceparent?: string): Promise<Job> {
  const { job } = await queue.lane("tenant-7").enqueue(request, traceparent === undefined ? {} : { traceparent });
  return job;
}

export const traceOf = (job: Job): string | null => job.traceparent;

export function codeOf(error: unknown): string | null {
  return error instanceof QueueError ? error.code : null;
}

/** A job that waits for a payment, released when the payment's webhook completes its waitpoint; then its chunks and its end. */
export async function pay(order: string): Promise<{ waitpoint: Waitpoint; events: StreamEvent[] }> {
  const lane = queue.lane("tenant-7");
  const { waitpoint, callbackUrl } = await lane.createWaitpoint({ id: `${order}.paid`, timeoutMs: 86_400_000 });
  await lane.enqueue({ id: order, kind: "order.ship", dependsOn: [{ waitpoint: waitpoint.id }] });
  const paid = await lane.completeWaitpoint(waitpoint.id, { result: { callbackUrl: callbackUrl ?? null } }).catch((e: unknown) => {
    const settled = settledWaitpoint(e);
    if (settled === null) throw e;
    return { waitpoint: settled, created: false };
  });
  const events: StreamEvent[] = [];
  for await (const event of lane.stream(order)) events.push(event);
  await lane.wait(order, { timeoutMs: 60_000 });
  return { waitpoint: paid.waitpoint, events };
}

// @ts-expect-error the lane class belongs to the library entry, not the client
export type { Lane } from "switchyard/client";
