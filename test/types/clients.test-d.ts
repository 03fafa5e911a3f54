/**
 * Type tests of the clients' waitpoints and results, checked by `tsc --noEmit`, never run: what a user
 * of `switchyard/client` (and of the library entry, which re-exports it) writes compiles, and a wrong
 * argument does not.
 */
import { expectTypeOf } from "vitest";
import {
  createHttpClient,
  QueueError,
  settledWaitpoint,
  type DependsOnItem,
  type EnqueueRequest,
  type HttpLaneClient,
  type Job,
  type LaneClient,
  type StreamEvent,
  type WaitOptions,
  type Waitpoint,
  type WaitpointCompleteAnswer,
  type WaitpointCreateAnswer,
  type WaitpointListQuery,
  type WaitpointPage,
} from "../../src/client/index.js";
import { createLaneClient, type Waitpoint as LibraryWaitpoint } from "../../src/index.js";

declare const namespace: Parameters<typeof createLaneClient>[0];

export async function waitpoints(lane: LaneClient): Promise<void> {
  const created = await lane.createWaitpoint({ id: "order-9.paid", timeoutMs: 60_000 });
  expectTypeOf(created).toEqualTypeOf<WaitpointCreateAnswer>();
  expectTypeOf(created.waitpoint).toEqualTypeOf<Waitpoint>();
  expectTypeOf(created.callbackUrl).toEqualTypeOf<string | undefined>();
  expectTypeOf(created.created).toBeBoolean();
  expectTypeOf(await lane.createWaitpoint()).toEqualTypeOf<WaitpointCreateAnswer>();
  expectTypeOf(await lane.getWaitpoint("order-9.paid")).toEqualTypeOf<{ waitpoint: Waitpoint }>();
  expectTypeOf(await lane.completeWaitpoint("order-9.paid", { result: { paid: true } })).toEqualTypeOf<WaitpointCompleteAnswer>();
  expectTypeOf(await lane.completeWaitpoint("order-9.paid")).toEqualTypeOf<WaitpointCompleteAnswer>();
  expectTypeOf(await lane.listWaitpoints({ state: "pending", limit: 10 })).toEqualTypeOf<WaitpointPage>();
  expectTypeOf<Waitpoint["state"]>().toEqualTypeOf<"pending" | "completed" | "timedOut">();
  expectTypeOf<LibraryWaitpoint>().toEqualTypeOf<Waitpoint>();

  // @ts-expect-error timeoutMs is a number of milliseconds
  await lane.createWaitpoint({ timeoutMs: "1m" });
  // @ts-expect-error a completion's body is {result?}, not the result itself
  await lane.completeWaitpoint("order-9.paid", { paid: true });
  // @ts-expect-error no such state
  await lane.listWaitpoints({ state: "settled" });
  // @ts-expect-error a waitpoint is read by its id
  await lane.getWaitpoint({ id: "order-9.paid" });

  try {
    await lane.completeWaitpoint("order-9.paid");
  } catch (e) {
    expectTypeOf(settledWaitpoint(e)).toEqualTypeOf<Waitpoint | null>();
    if (e instanceof QueueError && e.code === "waitpoint_settled" && e.details && "waitpoint" in e.details) expectTypeOf(e.details.waitpoint).toEqualTypeOf<Waitpoint>();
  }
}

export async function waits(lane: LaneClient): Promise<void> {
  const item: DependsOnItem = { lane: "tenant-7", waitpoint: "order-9.paid" };
  const request: EnqueueRequest = { kind: "order.ship", dependsOn: [{ waitpoint: item.waitpoint }, { waitpoint: "w", lane: "other" }, { id: "job-1" }] };
  expectTypeOf(await lane.wait("job-1", { timeoutMs: 5_000 })).toEqualTypeOf<Job>();
  expectTypeOf((await lane.enqueueAndWait(request, { timeoutMs: 5_000, traceparent: undefined })).job).toEqualTypeOf<Job>();
  expectTypeOf<WaitOptions>().toEqualTypeOf<{ timeoutMs?: number }>();
  // @ts-expect-error a dependsOn item names a job (id) or a waitpoint, not a bare string
  await lane.enqueue({ kind: "order.ship", dependsOn: ["order-9.paid"] });
  expectTypeOf(await lane.waitOn("job-1", { token: "t", waitpoint: "job-1.approved", timeoutMs: 60_000 })).toEqualTypeOf<{ job: Job; waitpoint: Waitpoint }>();
  // @ts-expect-error an attempt's wait is fenced: it names its lease token
  await lane.waitOn("job-1", { waitpoint: "job-1.approved" });
  // @ts-expect-error wait's timeout is an option
  await lane.wait("job-1", 5_000);
}

export async function streams(): Promise<void> {
  const lane = createHttpClient({ baseUrl: "https://queue.example.com", token: "t" }).lane("tenant-7");
  expectTypeOf(lane).toEqualTypeOf<HttpLaneClient>();
  for await (const event of lane.stream("job-1", { after: 3 })) {
    expectTypeOf(event).toEqualTypeOf<StreamEvent>();
    if (event.event === "end") expectTypeOf(event.data.job).toEqualTypeOf<Job>();
  }
  expectTypeOf(await lane.writeStream("job-1", { token: "t", chunks: ["a"] })).toEqualTypeOf<{ written: number; lastEventId: number }>();
  // The RPC client's lanes have the waits and the waitpoints, and no stream (it is an HTTP route).
  const rpc = createLaneClient(namespace).lane("tenant-7");
  expectTypeOf(rpc).toEqualTypeOf<LaneClient>();
  expectTypeOf(rpc.createWaitpoint).toEqualTypeOf<LaneClient["createWaitpoint"]>();
  // @ts-expect-error streams are the HTTP client's
  rpc.stream("job-1");
}

export const firstPage: WaitpointListQuery = { state: "pending", prefix: "order-9.", limit: 50 };
