/**
 * How a route reaches its lane: the stub of the route's `{lane}` (validated by the route's params),
 * and the call that unwraps the lane's answer, its value or its refusal thrown as a `QueueError` for
 * the app's one error handler. Every route reaches lanes through here.
 */
import type { Context } from "hono";
import type { Lane } from "../durable/lane.js";
import { unwrap, type Result } from "../shared/errors.js";
import type { AppEnv } from "./openapi.js";

export type LaneStub = DurableObjectStub<Lane>;

/** The stub of a lane: the route's own (its `{lane}` parameter), or the one named. */
export function laneOf(c: Context<AppEnv>, name: string = c.req.param("lane") ?? ""): LaneStub {
  return c.env.LANE.getByName(name);
}

/** Calls the route's lane (or the one named): the answer's value, or its refusal thrown as a `QueueError`. */
export async function callLane<T>(c: Context<AppEnv>, call: (lane: LaneStub) => Promise<Result<T>>, name?: string): Promise<T> {
  return unwrap(await call(laneOf(c, name)));
}
