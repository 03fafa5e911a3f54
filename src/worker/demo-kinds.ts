/**
 * The demo kinds' payload schemas (docs/api.md "Demo executors"), which the dev worker's lane
 * declares: checked at enqueue (400 `invalid_payload`) and listed in `/openapi.json`'s `x-kinds`.
 * Objects take other fields too; no kind declares a result schema.
 */
import { z } from "zod";
import type { KindSchemas } from "../shared/kinds.js";

const count = () => z.int().min(0);

export const demoKinds = {
  "demo.echo": { payload: z.unknown() },
  "demo.deps": { payload: z.unknown() },
  "demo.sleep": { payload: z.looseObject({ ms: count(), progressEveryMs: count().optional() }) },
  "demo.fail": { payload: z.looseObject({ failTimes: count() }) },
  "demo.steps": { payload: z.looseObject({ steps: count(), failAt: z.int().min(1).optional() }) },
  "demo.throw": { payload: z.looseObject({ value: z.enum(["null-prototype", "symbol", "bad-tostring", "undefined", "number", "string"]) }) },
  "demo.sleepy": { payload: z.looseObject({ sleeps: count(), ms: count() }) },
  "demo.batch": { payload: z.looseObject({ fail: z.boolean().optional() }) },
  "demo.approval": { payload: z.looseObject({ timeoutMs: z.int().min(1).optional() }).nullable() },
  "demo.stream": { payload: z.looseObject({ chunks: z.int().min(0).max(1000), everyMs: count().optional() }) },
} satisfies KindSchemas;
