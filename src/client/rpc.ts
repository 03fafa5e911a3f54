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
import { MAX_BATCH_JOBS, MAX_BODY_BYTES } from "../shared/defaults.js";
import { Name, toIssues } from "../shared/schemas.js";
import { GroupCommit } from "./group-commit.js";
import type { LaneClient } from "./types.js";

export interface LaneNamespaceClient {
  /** The client of one lane; the name must match the API's name pattern. */
  lane(name: string): LaneClient;
}

/** Unwraps a lane's `Result`: the value, or the refusal thrown as a `QueueError`. */
async function value<T>(answer: Promise<Result<T>>): Promise<T> {
  return unwrap(await answer);
}

export interface LaneClientOptions {
  /**
   * Group commit (default true): concurrent single enqueues to one lane from this isolate travel as
   * one call and one commit, each answered on its own (client/group-commit.ts). A lone enqueue waits
   * one microtask at most.
   */
  groupCommit?: boolean;
}

/** One group commit per namespace, per isolate: every client of a namespace shares its groups. */
const groupsOf = new WeakMap<object, GroupCommit<string, string>>();

/** The groups of `namespace`. */
function groups(namespace: object): GroupCommit<string, string> {
  let g = groupsOf.get(namespace);
  if (!g) groupsOf.set(namespace, (g = new GroupCommit({ maxItems: MAX_BATCH_JOBS, maxBytes: MAX_BODY_BYTES })));
  return g;
}

/** How the group commit of `namespace` has gone in this isolate (the benchmark's figures). */
export function groupCommitCounters(namespace: object): { calls: number; items: number; largest: number } {
  return { ...groups(namespace).counters };
}

/**
 * One call for a group of enqueue texts: alone, as `enqueueText`; else `enqueueGroup`, whose refusal
 * of the whole call (a lane of a newer schema) becomes every caller's answer.
 */
export async function sendGroup(stub: { enqueueText(text: string): string | Promise<string>; enqueueGroup(texts: string[]): Result<string[]> | Promise<Result<string[]>> }, texts: string[]): Promise<string[]> {
  if (texts.length === 1) return [await stub.enqueueText(texts[0]!)];
  const answer = await stub.enqueueGroup(texts);
  return answer.ok ? answer.value : texts.map(() => JSON.stringify(answer));
}

export function createLaneClient<L extends Lane>(namespace: DurableObjectNamespace<L>, options: LaneClientOptions = {}): LaneNamespaceClient {
  const grouped = options.groupCommit !== false;
  return {
    lane(name) {
      const parsed = Name.safeParse(name);
      if (!parsed.success) throw new QueueError("invalid_request", "invalid lane name", toIssues(parsed.error, ["lane"]));
      // The stub's methods, as the lane class declares them (RPC preserves their plain-data answers).
      const stub = namespace.getByName(name);
      return {
        name,
        enqueue: async (request, options = {}) => {
          // As JSON text both ways (Lane.enqueueText): a string crosses RPC cheaper than an object, and
          // a new job comes back as its id and creation time, the job built here from the request (enqueue-text.ts).
          // A request JSON cannot carry (a BigInt) goes as it is, for the lane to say what is wrong.
          // The trace context goes beside the request's fields, where the lane looks for it (durable/input.ts).
          const sent = options.traceparent === undefined ? request : { ...request, traceparent: options.traceparent };
          let text: string | undefined;
          try {
            text = JSON.stringify(sent);
          } catch {
            text = undefined;
          }
          if (typeof text !== "string") return value(stub.enqueue(sent));
          const answer = grouped ? await groups(namespace).call(name, text, text.length, (texts) => sendGroup(stub, texts)) : await stub.enqueueText(text);
          return unwrap(readEnqueueAnswer(text, answer, name));
        },
        enqueueBatch: (request, options = {}) => value(stub.enqueueBatch(options.traceparent === undefined ? request : { ...request, traceparent: options.traceparent })),
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
