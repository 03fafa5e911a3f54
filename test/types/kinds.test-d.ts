/**
 * Type tests of typed kinds, checked by `tsc --noEmit`, never run: the RPC client typed from its lane
 * class (`createLaneClient<typeof MyLane>`) refuses to compile an enqueue of a kind the lane does not
 * declare or with a payload its schema refuses, and answers jobs typed by kind. Each `@ts-expect-error`
 * line breaks the build if it ever compiles.
 */
import type { StandardSchemaV1 } from "@standard-schema/spec";
import { expectTypeOf } from "vitest";
import { z } from "zod";
import { createLaneClient, defineLane, type LaneClient } from "../../src/index.js";

/** Any Standard Schema types the client, not only zod's: this one is written by hand. */
declare const handMade: StandardSchemaV1<{ n: number }>;

class MailLane extends defineLane({
  kinds: {
    "email.send": { payload: z.object({ to: z.string(), cc: z.array(z.string()).optional() }), result: z.object({ sent: z.boolean() }) },
    "report.build": { payload: z.object({ month: z.int() }).nullable() },
    "count.up": { payload: handMade },
  },
}) {}
class UntypedLane extends defineLane({ executors: {} }) {}

declare const mail: DurableObjectNamespace<MailLane>;
declare const untyped: DurableObjectNamespace<UntypedLane>;

export async function typedEnqueues(): Promise<void> {
  const lane = createLaneClient<typeof MailLane>(mail).lane("tenant-7");
  const sent = await lane.enqueue({ kind: "email.send", payload: { to: "a@b.co" }, queue: "user-9", priority: 2 });
  expectTypeOf(sent.job.kind).toEqualTypeOf<"email.send">();
  expectTypeOf(sent.job.payload).toEqualTypeOf<{ to: string; cc?: string[] | undefined }>();
  await lane.enqueue({ kind: "report.build" }); // its schema takes null: the payload may be left out
  await lane.enqueue({ kind: "count.up", payload: { n: 1 } });
  await lane.enqueueBatch({ jobs: [{ kind: "email.send", payload: { to: "a@b.co" } }, { kind: "count.up", payload: { n: 2 } }] });

  // @ts-expect-error a kind the lane does not declare
  await lane.enqueue({ kind: "email.sned", payload: { to: "a@b.co" } });
  // @ts-expect-error a payload its schema refuses
  await lane.enqueue({ kind: "email.send", payload: { to: 42 } });
  // @ts-expect-error a payload left out that its schema requires
  await lane.enqueue({ kind: "email.send" });
  // @ts-expect-error a hand-made Standard Schema types its kind's payload too
  await lane.enqueue({ kind: "count.up", payload: { n: "1" } });
  // @ts-expect-error a batch's items are typed as well
  await lane.enqueueBatch({ jobs: [{ kind: "email.send", payload: {} }] });
  // @ts-expect-error and so is enqueueAndWait's request
  await lane.enqueueAndWait({ kind: "report.build", payload: { month: "may" } });
}

export async function typedResults(): Promise<void> {
  const lane = createLaneClient<typeof MailLane>(mail).lane("tenant-7");
  const job = await lane.wait<"email.send">("job-1", { timeoutMs: 5_000 });
  expectTypeOf(job.result).toEqualTypeOf<{ sent: boolean } | null>();
  const any = await lane.wait("job-2");
  if (any.kind === "email.send") expectTypeOf(any.result).toEqualTypeOf<{ sent: boolean } | null>();
  if (any.kind === "report.build") expectTypeOf(any.payload).toEqualTypeOf<{ month: number } | null>();
  const done = await lane.enqueueAndWait({ kind: "email.send", payload: { to: "a@b.co" } });
  expectTypeOf(done.job.result).toEqualTypeOf<{ sent: boolean } | null>();
  // A kind without a result schema completes with any JSON.
  expectTypeOf((await lane.wait<"count.up">("job-3")).result).toEqualTypeOf<unknown>();
  // @ts-expect-error wait names a declared kind
  await lane.wait<"email.sned">("job-1");
}

export function untypedLanes(): void {
  // A lane that declares no kinds, or a client not told its class: any kind, any JSON, as before.
  expectTypeOf(createLaneClient<typeof UntypedLane>(untyped).lane("t")).toEqualTypeOf<LaneClient>();
  expectTypeOf(createLaneClient(untyped).lane("t")).toEqualTypeOf<LaneClient>();
  expectTypeOf(createLaneClient(mail).lane("t")).toEqualTypeOf<LaneClient>();
}
