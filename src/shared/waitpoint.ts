/**
 * Waitpoints (docs/api.md "Waitpoints"): a named one-shot latch in a lane, settled once, by a
 * completion or by its timeout. The type, its requests and their limits, shared by the front worker
 * and the lane (which validates every RPC argument again).
 */
import { z } from "@hono/zod-openapi";
import { MAX_SNOOZE_MS } from "./defaults.js";
import type { Json } from "./job.js";

export const WAITPOINT_STATES = ["pending", "completed", "timedOut"] as const;
export type WaitpointState = (typeof WAITPOINT_STATES)[number];

export interface Waitpoint {
  id: string;
  lane: string;
  state: WaitpointState;
  /** The completion's result (null when none); null while pending or once timed out. */
  result: Json;
  /** When a pending waitpoint becomes timedOut (null: never); kept as it was once settled. */
  timeoutAt: number | null;
  createdAt: number;
  settledAt: number | null;
  /** How many jobs wait on it now, in every lane. */
  waiters: number;
}

/** The longest `timeoutMs` of a waitpoint: a year, as a snooze's delay. */
export const MAX_WAITPOINT_TIMEOUT_MS = MAX_SNOOZE_MS;

/**
 * A waitpoint id: a name, or the id of an in-process wait of a schedule's fire, `<name>@<T>.<wait
 * name>` (the fire's job id, as job ids accept it, then the wait's name).
 */
export const WAITPOINT_ID_PATTERN = /^(?:[A-Za-z0-9][A-Za-z0-9._:-]{0,127}|[A-Za-z0-9][A-Za-z0-9._:-]{0,99}@(?:0|[1-9][0-9]{0,15})\.[A-Za-z0-9._:-]{1,128})$/;

export const WaitpointId = z
  .string()
  .regex(WAITPOINT_ID_PATTERN, "must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$, or be <schedule name>@<epoch ms>.<wait name>")
  .openapi({ example: "order-9.paid" });

export const WaitpointCreateRequest = z
  .strictObject({
    id: WaitpointId.optional(),
    timeoutMs: z.number().int().min(1).max(MAX_WAITPOINT_TIMEOUT_MS).optional().openapi({ description: "the waitpoint times out this long after its creation" }),
  })
  .openapi("WaitpointCreateRequest");
export type WaitpointCreateRequest = z.infer<typeof WaitpointCreateRequest>;

export const WaitpointCompleteRequest = z
  .strictObject({ result: z.unknown().optional().openapi({ description: "any JSON value, at most 128 KiB" }) })
  .openapi("WaitpointCompleteRequest");
export type WaitpointCompleteRequest = z.infer<typeof WaitpointCompleteRequest>;

/** What a create answers: the waitpoint, and whether this call made it (201) or found it (200). */
export interface WaitpointCreated {
  waitpoint: Waitpoint;
  created: boolean;
}

/** What a completion answers: the waitpoint it settled, and whether it made it (201: an unknown id, created completed). */
export type WaitpointCompleted = WaitpointCreated;
