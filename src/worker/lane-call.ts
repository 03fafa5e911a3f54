/**
 * How a route reaches its lane: the stub of the route's `{lane}` (validated by the route's params),
 * and the call that unwraps the lane's answer, its value or its refusal thrown as a `QueueError` for
 * the app's one error handler. Every route reaches lanes through here, and through the router
 * (routing/router.ts) the shards of a sharded lane.
 */
import type { Context } from "hono";
import type { Lane } from "../durable/lane.js";
import { GroupCommit, sendGroup } from "../client/group-commit.js";
import type { EnqueueAnswer } from "../shared/answers.js";
import { MAX_BATCH_JOBS, MAX_BODY_BYTES } from "../shared/defaults.js";
import { readEnqueueAnswer } from "../shared/enqueue-text.js";
import { ok, unwrap, type Result } from "../shared/errors.js";
import { laneExposition } from "../durable/metrics/exposition.js";
import type { AppEnv } from "./openapi.js";
import { ShardRouter } from "../routing/router.js";
import type { EnqueueRequest } from "../shared/schemas.js";

export type LaneStub = DurableObjectStub<Lane>;

/** The stub of a lane: the route's own (its `{lane}` parameter), or the one named. */
export function laneOf(c: Context<AppEnv>, name: string = c.req.param("lane") ?? ""): LaneStub {
  return c.env.LANE.getByName(name);
}

/** Calls the route's lane (or the one named): the answer's value, or its refusal thrown as a `QueueError`. */
export async function callLane<T>(c: Context<AppEnv>, call: (lane: LaneStub) => Promise<Result<T>>, name?: string): Promise<T> {
  return unwrap(await call(laneOf(c, name)));
}

/** The front worker's router: its calls reach the lane class's whole stubs. */
type LaneRouter = ShardRouter<LaneStub>;

/** This isolate's router of each lanes' namespace: the shard counts it has read (routing/router.ts). */
const routers = new WeakMap<object, LaneRouter>();

/** The router of the app's lanes: how a route reaches the shards of a lane (docs/concepts.md "Sharded lanes"). */
export function routerOf(c: Context<AppEnv>): LaneRouter {
  let router = routers.get(c.env.LANE);
  if (!router) routers.set(c.env.LANE, (router = new ShardRouter(c.env.LANE)));
  return router;
}

/** The route's lane name (its `{lane}`). */
export function laneName(c: Context<AppEnv>): string {
  return c.req.param("lane") ?? "";
}

/** Calls the route's lane through its router: the answer's value, or its refusal thrown as a `QueueError`. */
export async function route<T>(c: Context<AppEnv>, call: (router: LaneRouter, lane: string) => Promise<Result<T>>): Promise<T> {
  return unwrap(await call(routerOf(c), laneName(c)));
}

/**
 * The lane's metrics (Prometheus text): one shard's as it renders them; a sharded lane's shards'
 * reports merged as the registry merges them for `GET /v1/metrics` (`laneExposition`): every count,
 * counter and histogram summed, the oldest due age from the earliest queued runAt of any shard, at
 * shard 0's clock.
 */
export async function readLaneMetrics(router: LaneRouter, lane: string): Promise<Result<string>> {
  const count = await router.shards(lane, false);
  if (!count.ok) return count;
  if (count.value === 1) return router.stub(lane, 0).metrics();
  const readings = await router.all(lane, (stub) => stub.metricsReport(), false);
  if (!readings.ok) return readings;
  return ok(laneExposition(lane, readings.value.map((r) => r.report), readings.value[0]!.nowMs));
}

/** This isolate's group commit of single enqueues, by lane (client/group-commit.ts). */
const enqueues = new GroupCommit<string, string>({ maxItems: MAX_BATCH_JOBS, maxBytes: MAX_BODY_BYTES });

/** How the front worker's group commit has gone in this isolate: calls to lanes, the enqueues they carried. */
export function enqueueGroupCounters(): { calls: number; items: number; largest: number } {
  return { ...enqueues.counters };
}

/**
 * One enqueue, through the isolate's group commit: concurrent enqueues to the route's lane go as one
 * call and one commit, each answered as its own call would be. The group's call this request makes
 * is kept alive past the request (`waitUntil`): other requests wait on it.
 */
export async function enqueueOne(c: Context<AppEnv>, request: EnqueueRequest & { traceparent?: string }): Promise<EnqueueAnswer> {
  const name = laneName(c);
  return route(c, (router) =>
    router.enqueue(name, request, async (stub, objectName, routed) => {
      if (c.env.GROUP_COMMIT === "off") return stub.enqueue(routed);
      const text = JSON.stringify(routed);
      const answer = await enqueues.call(objectName, text, text.length, (texts) => sendGroup(stub, texts), (p) => c.executionCtx.waitUntil(p));
      // The route read the request with the lane's schema and its trace context as the lane stores it:
      // a new job is built from that, not from its text read and checked again.
      return readEnqueueAnswer(answer, name, request);
    }),
  );
}
