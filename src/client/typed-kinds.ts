/**
 * The RPC client typed from its lane class (docs/api.md "Typed kinds"): `createLaneClient<typeof
 * MyLane>(env.LANE)` reads the kinds the class declares (`defineLane({ kinds })`). Then an enqueue of
 * a kind it does not declare, or with a payload its schema's input type refuses, does not compile, and
 * `wait` answers jobs typed by kind (narrowed by `job.kind`, or by the kind given: `wait<"k">(id)`).
 * A lane that declares no kinds gets the plain `LaneClient`. Types only: nothing here runs.
 */
import type { BatchAnswer, EnqueueAnswer } from "../shared/answers.js";
import type { Job } from "../shared/job.js";
import type { KindSchemas, PayloadOf, ResultOf } from "../shared/kinds.js";
import type { EnqueueRequest } from "../shared/schemas.js";
import type { EnqueueOptions, LaneClient, WaitOptions } from "./types.js";

/** The kinds a lane class declares (`{}`: none, or a class not made by `defineLane`). */
export type KindsOf<C> = C extends { readonly kinds: infer K extends KindSchemas } ? K : {};

/** The names of the declared kinds. */
export type KindName<K extends KindSchemas> = keyof K & string;

/** The payload field of a kind's enqueue: optional when its schema takes null (an absent payload is null). */
type PayloadField<P> = null extends P ? { payload?: P } : { payload: P };

/** An enqueue request of one of the declared kinds, its payload typed by the kind's schema. */
export type TypedEnqueueRequest<K extends KindSchemas, N extends KindName<K> = KindName<K>> = N extends KindName<K>
  ? Omit<EnqueueRequest, "kind" | "payload"> & { kind: N } & PayloadField<PayloadOf<K[N]>>
  : never;

/** A job of the declared kind `N` (default: any of them, told apart by `kind`): its payload and result typed. */
export type TypedJob<K extends KindSchemas, N extends KindName<K> = KindName<K>> = N extends KindName<K>
  ? Omit<Job, "kind" | "payload" | "result"> & { kind: N; payload: PayloadOf<K[N]>; result: ResultOf<K[N]> | null }
  : never;

/** An enqueue's answer, its job typed. */
export type TypedEnqueueAnswer<K extends KindSchemas, N extends KindName<K> = KindName<K>> = Omit<EnqueueAnswer, "job"> & { job: TypedJob<K, N> };

/** The client of one lane whose class declares kinds `K`: `LaneClient`, its enqueues and waits typed. */
export interface TypedLaneClient<K extends KindSchemas> extends Omit<LaneClient, "enqueue" | "enqueueBatch" | "enqueueAndWait" | "wait" | "get"> {
  /** Enqueues a job of a declared kind, idempotent by `id`. */
  enqueue<N extends KindName<K>>(request: TypedEnqueueRequest<K, N>, options?: EnqueueOptions): Promise<TypedEnqueueAnswer<K, N>>;
  /** Enqueues 1..1000 jobs of declared kinds, all or nothing. */
  enqueueBatch(request: { jobs: TypedEnqueueRequest<K>[] }, options?: EnqueueOptions): Promise<BatchAnswer>;
  /** Job `id` (of kind `N`, when given), settled or as it stands once `timeoutMs` has passed. */
  wait<N extends KindName<K> = KindName<K>>(id: string, options?: WaitOptions): Promise<TypedJob<K, N>>;
  /** Enqueues a job of a declared kind, then waits for it as `wait` does. */
  enqueueAndWait<N extends KindName<K>>(request: TypedEnqueueRequest<K, N>, options?: EnqueueOptions & WaitOptions): Promise<TypedEnqueueAnswer<K, N>>;
  get<N extends KindName<K> = KindName<K>>(id: string): Promise<TypedJob<K, N>>;
}

/** The client of one lane of kinds `K`: typed when it declares any. */
export type LaneClientOf<K extends KindSchemas> = [KindName<K>] extends [never] ? LaneClient : TypedLaneClient<K>;
