/**
 * Listing a lane's waitpoints (`GET /v1/lanes/{lane}/waitpoints`, an extension of docs/api.md
 * "Waitpoints" for the dashboard): of one state or all, those whose id starts with a prefix or all
 * (`<job id>.`: the in-process waits of one job), in id order, a page at a time. The cursor is
 * the last id of a page, so one cursor serves a lane of any shard count: every shard is asked for
 * what follows it, and their pages merge by id.
 */
import { z } from "@hono/zod-openapi";
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT } from "./defaults.js";
import { WAITPOINT_ID_PATTERN, WAITPOINT_STATES, type Waitpoint } from "./waitpoint.js";

const CURSOR_PREFIX = "w1.";

/** The characters of a waitpoint id (shared/waitpoint.ts): all below `~`, which ends a prefix's range of ids. */
const WAITPOINT_ID_CHARS = /^[A-Za-z0-9._:@-]{1,256}$/;

/** The ids a prefix selects are those from it (inclusive) to this (exclusive); every id, for the empty prefix. */
export function prefixEnd(prefix: string): string {
  return `${prefix}~`;
}

/** The cursor after a page whose last waitpoint is `id`. */
export function encodeWaitpointCursor(id: string): string {
  return CURSOR_PREFIX + id;
}

/** The id a cursor continues after, or null when it is not one this API gave. */
export function decodeWaitpointCursor(cursor: string): string | null {
  if (!cursor.startsWith(CURSOR_PREFIX)) return null;
  const id = cursor.slice(CURSOR_PREFIX.length);
  return WAITPOINT_ID_PATTERN.test(id) ? id : null;
}

export const WaitpointListQuery = z.strictObject({
  state: z.enum(WAITPOINT_STATES).optional().openapi({ description: "only waitpoints in this state (default: every state)" }),
  prefix: z
    .string()
    .regex(WAITPOINT_ID_CHARS, "must be 1 to 256 of the characters a waitpoint id may hold")
    .optional()
    .openapi({ description: "only waitpoints whose id starts with this (`<job id>.`: the waits `ctx.waitFor` made for that job)" }),
  limit: z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).default(DEFAULT_LIST_LIMIT),
  cursor: z
    .string()
    .refine((c) => decodeWaitpointCursor(c) !== null, "is not a cursor this API gave")
    .optional()
    .openapi({ description: "the cursor of the previous page" }),
});
export type WaitpointListQuery = z.input<typeof WaitpointListQuery>;

/** A page of waitpoints in id order; `cursor` continues after its last (null: the end). */
export interface WaitpointPage {
  waitpoints: Waitpoint[];
  cursor: string | null;
}

/** One shard's page: its waitpoints after the cursor, and whether it holds more after them. */
export interface WaitpointShardPage {
  waitpoints: Waitpoint[];
  more: boolean;
}
