/**
 * `createWorker` handlers' durable waits (`ctx.waitFor`, `ctx.waitpointId`), over the app's own fetch:
 * the first time the attempt ends in a wait (the ack op `wait`), the job blocked on `<job id>.<name>`;
 * the attempt that resumes passes through with the waitpoint's outcome, a timeout included.
 */
import { env, exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import { createLaneClient } from "../../src/client/rpc.js";
import { createWorker, type WorkerEvent, type WorkerHandler } from "../../src/client/worker.js";
import { TOKEN } from "../helpers/http.js";

function inWorker(handlers: Record<string, WorkerHandler>, onEvent: (event: WorkerEvent) => void) {
  const name = crypto.randomUUID();
  const worker = createWorker({
    url: "http://switchyard.test", token: TOKEN, lane: name, waitMs: 5_000, handlers,
    fetch: (input, init) => exports.default.fetch(new Request(input, init)),
    onEvent,
  });
  return { name, lane: createLaneClient(env.LANE).lane(name), stub: env.LANE.getByName(name), worker };
}

it("a handler waits on <job id>.<name>, gives its attempt back, and resumes with the waitpoint's result", async () => {
  let blocked!: () => void;
  const waiting = new Promise<void>((resolve) => (blocked = resolve));
  let completed!: () => void;
  const done = new Promise<void>((resolve) => (completed = resolve));
  const ids: string[] = [];
  const { lane, stub, worker } = inWorker(
    {
      "k.approve": async (_payload, ctx) => {
        ids.push(ctx.waitpointId("approval"));
        const waited = await ctx.waitFor("approval", { timeoutMs: 60_000 });
        return waited;
      },
    },
    (event) => {
      if (event.type === "waiting") blocked();
      if (event.type === "completed") completed();
    },
  );
  await lane.enqueue({ id: "j", kind: "k.approve", maxAttempts: 1 });
  await waiting;
  expect(await lane.get("j")).toMatchObject({ state: "blocked", attempts: 0 });
  const waitpoint = await stub.getWaitpoint("j.approval");
  expect(waitpoint.ok && waitpoint.value).toMatchObject({ state: "pending", waiters: 1 });
  await stub.completeWaitpoint("j.approval", { result: { by: "ana" } });
  await done;
  await worker.stop({ graceMs: 1_000 });
  expect(await lane.get("j")).toMatchObject({ outcome: "completed", result: { outcome: "completed", result: { by: "ana" } }, attempts: 1, generation: 2 });
  expect(ids).toEqual(["j.approval", "j.approval"]);
});

it("a name that makes no waitpoint id is refused in the handler, which may catch it", async () => {
  let completed!: () => void;
  const done = new Promise<void>((resolve) => (completed = resolve));
  const { lane, worker } = inWorker(
    { "k.bad": (_payload, ctx) => ctx.waitFor("no spaces").then(() => "passed", (e: { code?: string }) => e.code) },
    (event) => event.type === "completed" && completed(),
  );
  await lane.enqueue({ id: "b", kind: "k.bad" });
  await done;
  await worker.stop({ graceMs: 1_000 });
  expect(await lane.get("b")).toMatchObject({ outcome: "completed", result: "invalid_request" });
});

it("a wait name holding a '.' is refused in the handler (job a's b.c and job a.b's c would share a.b.c)", async () => {
  let completed!: () => void;
  const done = new Promise<void>((resolve) => (completed = resolve));
  const codes = (name: string, ctx: Parameters<WorkerHandler>[1]) => {
    let id: string;
    try {
      id = ctx.waitpointId(name);
    } catch (e) {
      id = (e as { code?: string }).code ?? "thrown";
    }
    return ctx.waitFor(name).then(() => [id, "passed"], (e: { code?: string }) => [id, e.code]);
  };
  const { lane, worker } = inWorker(
    { "k.dotted": async (_payload, ctx) => [await codes("b.c", ctx), await codes(".", ctx)] },
    (event) => event.type === "completed" && completed(),
  );
  await lane.enqueue({ id: "a", kind: "k.dotted" });
  await done;
  await worker.stop({ graceMs: 1_000 });
  expect(await lane.get("a")).toMatchObject({ outcome: "completed", result: [["invalid_request", "invalid_request"], ["invalid_request", "invalid_request"]] });
});
