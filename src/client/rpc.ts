/**
 * The RPC client, for code in a Worker that binds the lane namespace: enqueue and read without HTTP.
 *
 * ```ts
 * const queue = createLaneClient(env.LANE);
 * await queue.lane("tenant-7").enqueue({ kind: "email.send", payload: { to: "a@b.c" } });
 * ```
 */
import type { Lane } from "../durable/lane.js";
import { readEnqueueAnswer } from "../shared/enqueue-text.js";
import { QueueError, unwrap, type Result } from "../shared/errors.js";
import { MAX_BATCH_JOBS, MAX_BODY_BYTES } from "../shared/defaults.js";
import { Name, toIssues } from "../shared/schemas.js";
import { GroupCommit, sendGroup } from "./group-commit.js";
import type { PeerDirectory } from "../routing/peer.js";
import { ShardRouter } from "../routing/router.js";
import type { LaneClient } from "./types.js";
import type { KindSchemas } from "../shared/kinds.js";
import type { KindsOf, LaneClientOf } from "./typed-kinds.js";
import { jobWaits } from "./job-waits.js";
import { waitForJob } from "../routing/job-waits.js";
import { createWaitpoint, onWaitpoint } from "../routing/waitpoint-routing.js";
import { listWaitpoints } from "../routing/waitpoint-list-routing.js";
import { getBulk, startBulk } from "../routing/bulk-routing.js";

/** `K`: the kinds the lane class declares (`createLaneClient<typeof MyLane>`), which type its lanes' enqueues and waits. */
export interface LaneNamespaceClient<K extends KindSchemas = {}> {
  /** The client of one lane; the name must match the API's name pattern. */
  lane(name: string): LaneClientOf<K>;
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
 * `createLaneClient<typeof MyLane>(env.LANE)`: the lane class (made by `defineLane`) types the client
 * with the kinds it declares: an enqueue of another kind or with a wrong payload does not compile,
 * and waits answer jobs typed by kind.
 */
export function createLaneClient<C extends abstract new (...args: never) => Lane>(namespace: DurableObjectNamespace<InstanceType<C>>, options?: LaneClientOptions): LaneNamespaceClient<KindsOf<C>>;
/** Untyped by kind: a namespace of any lane class. */
export function createLaneClient<L extends Lane>(namespace: DurableObjectNamespace<L>, options?: LaneClientOptions): LaneNamespaceClient;
export function createLaneClient(namespace: DurableObjectNamespace<Lane>, options: LaneClientOptions = {}): LaneNamespaceClient<KindSchemas> {
  const grouped = options.groupCommit !== false;
  // The client's router: the shard counts it has read, per lane (routing/router.ts). A namespace of
  // any lane class `L` hands out stubs of `L`, which have every method of `Lane`: seen as `Lane`'s.
  const router = new ShardRouter(namespace as unknown as PeerDirectory<DurableObjectStub<Lane>>);
  return {
    lane(name) {
      const parsed = Name.safeParse(name);
      if (!parsed.success) throw new QueueError("invalid_request", "invalid lane name", toIssues(parsed.error, ["lane"]));
      const stub = () => router.stub(name, 0);
      const byId = <T>(id: string, call: (stub: DurableObjectStub<Lane>) => Promise<Result<T>>) => value(router.byId(name, id, call));
      const byToken = <T>(id: string, token: string, call: (stub: DurableObjectStub<Lane>) => Promise<Result<T>>) => value(router.byToken(name, id, token, call));
      // Waits (client/job-waits.ts): the enqueue below, then held reads routed by the job's id.
      const waits = jobWaits({ enqueue: (request, options) => client.enqueue(request, options), read: (id, waitMs) => value(waitForJob(router, name, id, waitMs)) });
      const client: LaneClient = {
        name,
        ...waits,
        enqueue: async (request, options = {}) => {
          // As JSON text both ways (Lane.enqueueText): a string crosses RPC cheaper than an object, and
          // a new job comes back as its id and creation time, the job built here from the request (shared/enqueue-text.ts).
          // A request JSON cannot carry (a BigInt) goes as it is, for the lane to say what is wrong.
          // The trace context goes beside the request's fields, where the lane looks for it (durable/input.ts).
          const sent = options.traceparent === undefined ? request : { ...request, traceparent: options.traceparent };
          return value(
            router.enqueue(name, sent, async (target, objectName, routed) => {
              let text: string | undefined;
              try {
                text = JSON.stringify(routed);
              } catch {
                text = undefined;
              }
              if (typeof text !== "string") return target.enqueue(routed);
              const answer = grouped ? await groups(namespace).call(objectName, text, text.length, (texts) => sendGroup(target, texts)) : await target.enqueueText(text);
              return readEnqueueAnswer(answer, name, text);
            }),
          );
        },
        enqueueBatch: (request, options = {}) => value(router.enqueueBatch(name, options.traceparent === undefined ? request : { ...request, traceparent: options.traceparent })),
        get: (id) => byId(id, (s) => s.getJob(id)),
        list: (query) => value(router.list(name, query ?? {})),
        info: () => value(router.info(name)),
        configure: (patch) => value(router.configure(name, patch)),
        cancel: (id, request) => byId(id, (s) => s.cancel(id, request ?? {})),
        requeue: (id) => byId(id, (s) => s.requeue(id)),
        sweep: (request) => value(router.sweep(name, request)),
        claim: (request) => value(router.claim(name, request ?? {}, null)),
        renew: (id, request) => byToken(id, request.token, (s) => s.renew(id, request)),
        complete: (id, request) => byToken(id, request.token, (s) => s.complete(id, request)),
        fail: (id, request) => byToken(id, request.token, (s) => s.fail(id, request)),
        release: (id, request) => byToken(id, request.token, (s) => s.release(id, request)),
        snooze: (id, request) => byToken(id, request.token, (s) => s.snooze(id, request)),
        waitOn: (id, request) => byToken(id, request.token, (s) => s.waitOn(id, request)),
        dependents: (id) => byId(id, (s) => s.dependents(id)),
        // An answer of one job carries its payload and result whole, read back from R2 by the lane.
        payload: (id) => byId(id, (s) => s.getJob(id)).then((job) => job.payload),
        result: (id) => byId(id, (s) => s.getJob(id)).then((job) => job.result),
        failLane: (request) => value(router.failLane(name, request)),
        bulk: async (request) => ({ bulk: await value(startBulk(router, name, request)) }),
        getBulk: async (id) => ({ bulk: await value(getBulk(router, name, id)) }),
        queue: (queue) => value(router.byQueue(name, queue, (s) => s.queueInfo(queue))),
        putQueue: (queue, request) => value(router.byQueue(name, queue, (s) => s.putQueue(queue, request))),
        purgeQueue: (queue) => value(router.byQueue(name, queue, (s) => s.purgeQueue(queue))),
        putSchedule: async (schedule, request) => ({ schedule: (await value(stub().putSchedule(schedule, request))).schedule }),
        getSchedule: (schedule) => value(stub().getSchedule(schedule)),
        listSchedules: (query) => value(stub().listSchedules(query ?? {})),
        deleteSchedule: (schedule) => value(stub().deleteSchedule(schedule)),
        acks: (request) => value(router.acks(name, request)),
        saveCheckpoint: (id, name_, request) => byToken(id, request.token, (s) => s.saveCheckpoint(id, name_, request)),
        checkpoints: (id) => byId(id, (s) => s.listCheckpoints(id)),
        progress: (id, request) => byToken(id, request.token, (s) => s.progress(id, request)),
        // A waitpoint lives in the shard its id hashes to (routing/waitpoint-routing.ts). No callbackUrl:
        // signing takes the API's SIGNING_SECRET, which this client does not hold.
        createWaitpoint: (request) => value(createWaitpoint(router, name, request ?? {})),
        getWaitpoint: async (id) => ({ waitpoint: await value(onWaitpoint(router, name, id, (s) => s.getWaitpoint(id))) }),
        completeWaitpoint: (id, request) => value(onWaitpoint(router, name, id, (s) => s.completeWaitpoint(id, request ?? {}))),
        listWaitpoints: (query) => value(listWaitpoints(router, name, query ?? {})),
      };
      return client as LaneClientOf<KindSchemas>;
    },
  };
}
