/**
 * A lane's per-minute history (docs/api.md, "Metrics"; docs/operations.md, "History"): the request
 * of `GET /v1/lanes/{lane}/history` and its answer, shared by the front worker, the lane and the
 * dashboard's types.
 */
import { z } from "@hono/zod-openapi";

/** A bucket's span: one minute. */
export const MINUTE_MS = 60_000;
/** How many minutes a lane keeps: 24 hours, one ring row each. */
export const HISTORY_MINUTES = 1440;
/** The default window of a history request: the last hour. */
export const DEFAULT_HISTORY_WINDOW_MS = 3_600_000;
/** The longest window: everything the lane keeps. */
export const MAX_HISTORY_WINDOW_MS = HISTORY_MINUTES * MINUTE_MS;

const windowMs = z
  .number()
  .int()
  .min(1)
  .max(MAX_HISTORY_WINDOW_MS)
  .openapi({ description: "how far back, in ms (default 3600000, at most 86400000): the minutes that end inside it" });

/** The lane's input (RPC): the window, validated again there. */
export const HistoryRequest = z.strictObject({ windowMs: windowMs.optional() });
export type HistoryRequest = z.infer<typeof HistoryRequest>;

/** The route's query string: the same window, as text. */
export const HistoryQuery = z.strictObject({
  windowMs: z.coerce.number().pipe(windowMs).optional().openapi({ param: { name: "windowMs", in: "query" }, type: "integer" }),
});

export const HistoryBucket = z
  .object({
    at: z.number().int().openapi({ description: "the minute's start, epoch ms" }),
    enqueued: z.number().int().openapi({ description: "jobs enqueued (new rows; a debounced replace is not one)" }),
    started: z.number().int().openapi({ description: "attempts started (claims and starts)" }),
    completed: z.number().int().openapi({ description: "jobs whose outcome was recorded completed" }),
    failed: z.number().int().openapi({ description: "jobs whose outcome was recorded failed (a retry is not one)" }),
    depth: z.number().int().openapi({ description: "queued jobs (not blocked) at the end of the minute" }),
  })
  .openapi("HistoryBucket");
export type HistoryBucket = z.infer<typeof HistoryBucket>;

export const HistoryAnswer = z
  .object({ buckets: z.array(HistoryBucket).openapi({ description: "every minute of the window, oldest first" }) })
  .openapi("History");
export type HistoryAnswer = z.infer<typeof HistoryAnswer>;
