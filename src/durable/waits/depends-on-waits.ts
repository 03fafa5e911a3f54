/**
 * What a dependent's enqueue (deps/dependencies.ts) asks of the waitpoints among its `dependsOn`
 * items (docs/api.md "Waitpoints"): how each stands, and the rows that remember them. Its own file,
 * so that the dependencies and the waits (waits.ts) each name it without naming each other.
 */
import type { DependsOnItem, WaitpointRef } from "../../shared/job.js";
import type { KnownWaitpoints, Registered, WaitRegistrations } from "./waitpoint-notices.js";

/** A waitpoint's settlement as a waiting job keeps it: completed with a result (JSON text), timed out, or not yet (null). */
export type WaitOutcome = "completed" | "timedOut";

/** One waitpoint a job waits on, as its enqueue found it: `position` is its place in `dependsOn`. */
export interface WaitEntry {
  position: number;
  ref: WaitpointRef;
  outcome: WaitOutcome | null;
  result: string | null;
  /** The token of its registration with the waitpoint's object (none: a waitpoint of this object). */
  token?: string;
}

/** The waitpoint items of a dependent: each as it stands, and those that do not exist. */
export interface LookedUp {
  entries: WaitEntry[];
  missing: WaitpointRef[];
}

export interface DependsOnWaits {
  /** The waitpoint items among `items` (a dependent's whole `dependsOn`), as they stand now: elsewhere, as `known` found them (registrations, by `waitKey`). */
  look(items: readonly DependsOnItem[], known?: KnownWaitpoints): LookedUp;
  /** The registrations that the dependents' waitpoint items of other objects call for, by lane (none: empty). */
  registrationsOf(specs: readonly { id: string; items: readonly DependsOnItem[] }[]): WaitRegistrations;
  /** Registers them under the enqueue's `token`, before it writes (remote-waits.ts). */
  register(byLane: WaitRegistrations, token: string): Promise<Registered>;
  /** Withdraws what `token` registered: its enqueue wrote nothing for those dependents. */
  withdraw(byLane: WaitRegistrations, token: string): Promise<void>;
  /** Writes what the dependent of `seq` knows of them, inside its enqueue's transaction. */
  insert(seq: number, entries: readonly WaitEntry[], now: number): void;
}

/** A `dependsOn` item that names a waitpoint. */
export const isWaitpointRef = (item: DependsOnItem): item is WaitpointRef => "waitpoint" in item;

/** The error of a job that a timed-out waitpoint failed (policy fail). */
export const timedOutError = (ref: WaitpointRef) => `waitpoint ${ref.lane}/${ref.waitpoint} timedOut`;

/** No waitpoint item is known here: each one is missing. */
export const NO_WAITS: DependsOnWaits = {
  look: (items) => ({ entries: [], missing: items.filter(isWaitpointRef) }),
  insert() {},
  registrationsOf: () => new Map(),
  register: async () => ({ known: new Map(), missing: [], refusal: null }),
  withdraw: async () => {},
};
