/**
 * The RPC client, for code in a Worker that binds the lane namespace: enqueue and read without HTTP.
 *
 * ```ts
 * const queue = createLaneClient(env.LANE);
 * await queue.lane("tenant-7").enqueue({ kind: "email.send", payload: { to: "a@b.c" } });
 * ```
 */
import { readEnqueueAnswer } from "../durable/enqueue/enqueue-text.js";
import type { Lane } from "../durable/lane.js";
import { QueueError, unwrap, type Result } from "../shared/errors.js";
import { Name, toIssues } from "../shared/schemas.js";
import type { LaneClient } from "./types.js";

export interface LaneNamespaceClient {
  /** The client of one lane; the name must match the API's name pattern. */
  lane(name: string): LaneClient;
}

/** Unwraps a lane's `Result`: the value, or the refusal thrown as a `QueueError`. */
async function value<T>(answer: Promise<Result<T>>): Promise<T> {
  return unwrap(await answer);
}

export function createLaneClient<L extends Lane>(namespace: DurableObjectNamespace<L>): LaneNamespaceClient {
  return {
    lane(name) {
      const parsed = Name.safeParse(name);
      if (!parsed.success) throw new QueueError("invalid_request", "invalid lane name", toIssues(parsed.error, ["lane"]));
      // The stub's methods, as the lane class declares them (RPC preserves their plain-data answers).
      const stub = namespace.getByName(name);
      return {
        name,
        enqueue: async (request) => {
          // As JSON text both ways (Lane.enqueueText): a string crosses RPC cheaper than an object, and
          // a new job comes back as its id and creation time, the job built here from the request (enqueue-text.ts).
          // A request JSON cannot carry (a BigInt) goes as it is, for the lane to say what is wrong.
          let text: string | undefined;
          try {
            text = JSON.stringify(request);
          } catch {
            text = undefined;
          }
          if (typeof text !== "string") return value(stub.enqueue(request));
          return unwrap(readEnqueueAnswer(text, await stub.enqueueText(text), name));
        },
        enqueueBatch: (request) => value(stub.enqueueBatch(request)),
        get: (id) => value(stub.getJob(id)),
        list: (query) => value(stub.listJobs(query ?? {})),
        info: () => value(stub.info()),
        configure: (patch) => value(stub.configure(patch)),
        cancel: (id, request) => value(stub.cancel(id, request ?? {})),
        requeue: (id) => value(stub.requeue(id)),
        sweep: (request) => value(stub.sweep(request)),
        claim: (request) => value(stub.claim(request ?? {})),
        renew: (id, request) => value(stub.renew(id, request)),
        complete: (id, request) => value(stub.complete(id, request)),
        fail: (id, request) => value(stub.fail(id, request)),
        release: (id, request) => value(stub.release(id, request)),
        snooze: (id, request) => value(stub.snooze(id, request)),
        dependents: (id) => value(stub.dependents(id)),
        failLane: (request) => value(stub.failLane(request)),
        queue: (queue) => value(stub.queueInfo(queue)),
        putQueue: (queue, request) => value(stub.putQueue(queue, request)),
        purgeQueue: (queue) => value(stub.purgeQueue(queue)),
        putSchedule: async (schedule, request) => ({ schedule: (await value(stub.putSchedule(schedule, request))).schedule }),
        getSchedule: (schedule) => value(stub.getSchedule(schedule)),
        listSchedules: (query) => value(stub.listSchedules(query ?? {})),
        deleteSchedule: (schedule) => value(stub.deleteSchedule(schedule)),
        acks: (request) => value(stub.acks(request)),
        saveCheckpoint: (id, name, request) => value(stub.saveCheckpoint(id, name, request)),
        checkpoints: (id) => value(stub.listCheckpoints(id)),
        progress: (id, request) => value(stub.progress(id, request)),
      };
    },
  };
}
