/** The request and answer schemas of bulk actions (docs/api.md "Bulk actions"); their types are bulk.ts. */
import { z } from "@hono/zod-openapi";
import { BULK_ACTIONS, BULK_STATES } from "./bulk.js";
import { MAX_REASON_CHARS } from "./defaults.js";
import { JOB_STATES, OUTCOMES } from "./job.js";
import { Name } from "./schemas.js";

const instant = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export const BulkFilterSchema = z
  .strictObject({
    state: z.enum(JOB_STATES).optional(),
    outcome: z.enum(OUTCOMES).optional(),
    kind: Name.optional(),
    queue: Name.optional(),
    createdAfter: instant.optional().openapi({ description: "only jobs created after this instant (exclusive)" }),
    createdBefore: instant.optional().openapi({ description: "only jobs created before this instant (exclusive)" }),
  })
  // No "everything" by accident: a filter names at least one field.
  .refine((filter) => Object.values(filter).some((v) => v !== undefined), { message: "a filter needs at least one field" })
  .openapi("BulkFilter");

export const BulkRequest = z
  .strictObject({
    action: z.enum(BULK_ACTIONS),
    filter: BulkFilterSchema,
    reason: z.string().max(MAX_REASON_CHARS).optional().openapi({ description: "the cancellation's reason (cancel only)" }),
  })
  .superRefine((request, ctx) => {
    if (request.reason !== undefined && request.action !== "cancel") ctx.addIssue({ code: "custom", path: ["reason"], message: "reason is for a cancel only" });
  })
  .openapi("BulkRequest");
export type BulkRequest = z.infer<typeof BulkRequest>;

export const BulkSchema = z
  .object({
    id: z.string(),
    action: z.enum(BULK_ACTIONS),
    filter: BulkFilterSchema,
    state: z.enum(BULK_STATES),
    matched: z.number().int().nullable(),
    done: z.number().int(),
    skipped: z.number().int(),
    createdAt: z.number().int(),
    finishedAt: z.number().int().nullable(),
  })
  .openapi("Bulk");

export const BulkAnswer = z.object({ bulk: BulkSchema }).openapi("BulkAnswer");
