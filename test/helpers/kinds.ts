/**
 * The kinds the test lanes declare (LANE, PLAIN_LANE): zod schemas, and a hand-made Standard Schema
 * whose check is asynchronous, as a schema library's async refinements are. Their names start with
 * `typed.`, which no other test uses: every other kind stays undeclared and takes any JSON.
 */
import type { StandardSchemaV1 } from "@standard-schema/spec";
import { z } from "zod";
import type { ExecutorRegistry } from "../../src/durable/attempts/executors.js";
import type { KindSchemas } from "../../src/shared/kinds.js";

/**
 * `{"ms": integer ≥ 0}`, checked asynchronously (its `validate` answers a Promise). Written by hand:
 * a Standard Schema needs no library, and this one converts to no JSON Schema.
 */
export const asyncMs: StandardSchemaV1<{ ms: number }> = {
  "~standard": {
    version: 1,
    vendor: "switchyard-test",
    validate: async (value) => {
      await Promise.resolve();
      const ms = typeof value === "object" && value !== null ? (value as { ms?: unknown }).ms : undefined;
      if (typeof ms === "number" && Number.isInteger(ms) && ms >= 0) return { value: value as { ms: number } };
      return { issues: [{ message: "ms must be an integer ≥ 0", path: [{ key: "ms" }] }] };
    },
  },
};

/**
 * A schema whose check itself breaks: it throws on `{"how": "throw"}`, and answers a rejected Promise
 * on `{"how": "reject"}`; anything else passes.
 */
export const breaking: StandardSchemaV1 = {
  "~standard": {
    version: 1,
    vendor: "switchyard-test",
    validate: (value) => {
      const how = typeof value === "object" && value !== null ? (value as { how?: unknown }).how : undefined;
      if (how === "throw") throw new TypeError("the check broke");
      if (how === "reject") return Promise.reject(new TypeError("the async check broke"));
      return { value };
    },
  },
};

/** Ten fields, as the benchmark's declared kind has. */
export const tenFields = z.object({
  a: z.string(), b: z.string(), c: z.int(), d: z.int().min(0), e: z.boolean(),
  f: z.number(), g: z.string().optional(), h: z.enum(["x", "y", "z"]), i: z.array(z.int()), j: z.string().min(1),
});

export const testKinds = {
  /** A payload with a field of its own, and a default the lane must not apply (stored as sent). */
  "typed.sleep": { payload: z.object({ ms: z.int().min(0), note: z.string().default("none") }) },
  "typed.async": { payload: asyncMs },
  /** Any payload; its result must be `{"sent": boolean}`. Its executor (LANE) returns the payload's `result`. */
  "typed.result": { payload: z.object({ result: z.unknown() }), result: z.object({ sent: z.boolean() }) },
  /** No executor anywhere: pull consumers only. */
  "typed.pull": { payload: z.object({ to: z.email() }), result: z.object({ sent: z.boolean() }) },
  "typed.ten": { payload: tenFields },
  "typed.breaks": { payload: breaking },
  /** A batch executor's kind (batch-executors.ts): its result must be `{"ms": integer ≥ 0}`, checked asynchronously. */
  "typed.batch": { payload: z.looseObject({ tag: z.string() }), result: asyncMs },
} satisfies KindSchemas;

/** LANE's executors of the typed kinds. */
export const kindExecutors: ExecutorRegistry = {
  "typed.result": (payload: { result: unknown }) => payload.result,
  "typed.sleep": () => ({ slept: true }),
};
