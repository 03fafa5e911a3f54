/**
 * What objects say to each other about jobs that wait on a waitpoint of another object (another lane,
 * or another shard of a sharded lane; docs/api.md "Waitpoints"), over Durable Object RPC, as
 * dependencies between jobs do (deps/notices.ts): the waiter's lane registers the waiting job with the
 * waitpoint's object (which answers whether it exists and, when settled, how), and the waitpoint's
 * object tells the waiter's of its settlement through its outbox until acknowledged. Both ends
 * validate with these schemas: a lane trusts no caller.
 */
import { z } from "zod";
import { MAX_BATCH_JOBS, MAX_DEPENDENCIES, OUTBOX_BATCH } from "../../shared/defaults.js";
import type { Result } from "../../shared/errors.js";
import { JobId, Name } from "../../shared/schemas.js";
import { MAX_SHARDS, parseShardObjectName } from "../../shared/shards.js";
import type { WaitpointRef } from "../../shared/job.js";
import { MAX_WAITPOINT_TIMEOUT_MS, WaitpointId, type Waitpoint } from "../../shared/waitpoint.js";

/** The object a waiting job lives in: its lane, or shard i of a sharded lane (`lane#i`), where its notices go. */
const ObjectName = z.string().refine((name) => {
  const { lane, index } = parseShardObjectName(name);
  return Name.safeParse(lane).success && index < MAX_SHARDS && (index > 0 || name === lane);
}, "must be a lane name, or a lane's shard (lane#1..lane#63)");

/**
 * A waiter's registration with waitpoint `id` of the receiving lane: job `waiter.id` (any job id: a
 * fire's and a dead-letter copy's wait too) of object `waiter.lane` waits on it. `create`: an
 * attempt's wait, which creates the waitpoint pending (timing out in `timeoutMs`, null: never) when
 * it does not exist. `token`: in a withdrawal, the token that registration was made under, which
 * stands for the call's own (so that one call takes back what many enqueues registered).
 */
export const WaitpointRegistrations = z
  .array(
    z.strictObject({
      id: WaitpointId,
      waiter: z.strictObject({ lane: ObjectName, id: JobId }),
      create: z.strictObject({ timeoutMs: z.number().int().min(1).max(MAX_WAITPOINT_TIMEOUT_MS).nullable() }).optional(),
      token: z.string().min(1).max(128).optional(),
    }),
  )
  .min(1)
  .max(MAX_BATCH_JOBS * MAX_DEPENDENCIES);
export type WaitpointRegistration = z.infer<typeof WaitpointRegistrations>[number];

/**
 * The answer to one registration: no such waitpoint (`missing`, nothing registered), or the waitpoint
 * as it is once registered (a settled one registers nothing: this answer is its notice).
 */
export type WaitpointRegistrationAnswer = { status: "missing" } | { status: "found"; waitpoint: Waitpoint };

/** One notice of a waitpoint's outbox: `key` is the sender's (its outbox row), `waiter` a job id of the receiving object. */
export const WaitpointNotices = z
  .array(
    z.strictObject({
      key: z.number().int(),
      waitpoint: z.strictObject({ lane: Name, waitpoint: WaitpointId }),
      waiter: JobId,
      outcome: z.enum(["completed", "timedOut"]),
      /** The completion's result as JSON text (null: none, or timed out). */
      result: z.string().nullable(),
    }),
  )
  .min(1)
  .max(OUTBOX_BATCH);
export type WaitpointNotice = z.infer<typeof WaitpointNotices>[number];

/**
 * What the receiver did with one notice, as for a job's notice: applied; applied before (`repeat`);
 * no such waiter (`gone`); all three acknowledge it. `pending`: the waiter's enqueue is between its
 * registration and its write: tell again later.
 */
export type WaitpointNoticeAnswer = "applied" | "repeat" | "gone" | "pending";

/** What a lane calls on another object (a lane, or a shard `lane#i`) about waiters of waitpoints (env.ts's `LanePeer`). */
export interface WaitpointWaiterPeer {
  registerWaitpointWaiters(registrations: unknown, hop?: number, token?: string): Promise<Result<WaitpointRegistrationAnswer[]>>;
  unregisterWaitpointWaiters(registrations: unknown, hop?: number, token?: string): Promise<Result<{ removed: number }>>;
  notifyWaitpointWaiters(notices: unknown): Promise<Result<WaitpointNoticeAnswer[]>>;
}

/** Registrations made by one enqueue or wait, by the lane of their waitpoints (another lane, or this one's other shards). */
export type WaitRegistrations = Map<string, WaitpointRegistration[]>;

/** The waitpoints a registration found, by key, and the token it registered under (kept with the waits it writes, to withdraw them). */
export type KnownWaitpoints = Map<string, Waitpoint> & { token?: string };

/** What registering answered: each waitpoint as it was found, by key; those that do not exist; and a lane's refusal (its call threw or refused). */
export interface Registered {
  known: KnownWaitpoints;
  missing: WaitpointRef[];
  refusal: Result<never> | null;
}
