/**
 * Typed kinds (docs/api.md "Typed kinds"): a lane declares, per kind, a Standard Schema of its
 * payload and maybe of its result (zod 4, valibot, arktype: any library that implements Standard
 * Schema v1). This file is what the lane, the front worker and the clients share of them: the
 * declaration's type, the types a client infers from it, a check's issues as the API's details, and
 * the schemas as JSON Schema for the OpenAPI document. Plain TypeScript: it runs anywhere.
 */
import type { StandardJSONSchemaV1, StandardSchemaV1 } from "@standard-schema/spec";
import type { ErrorBody, Issue } from "./errors.js";

export type { StandardSchemaV1 };

/** One kind's declaration: the schema of its payload, and maybe of its result. */
export interface KindSchema {
  payload: StandardSchemaV1;
  result?: StandardSchemaV1;
}

/** Kind → its declaration (`defineLane({ kinds })`). */
export type KindSchemas = Record<string, KindSchema>;

/** What an enqueue of kind `K` may carry as its payload (the schema's input: it is stored as sent). */
export type PayloadOf<S extends KindSchema> = StandardSchemaV1.InferInput<S["payload"]>;

/** What a job of the kind completes with: the result schema's input, or any JSON when it has none. */
export type ResultOf<S extends KindSchema> = S["result"] extends StandardSchemaV1 ? StandardSchemaV1.InferInput<S["result"]> : unknown;

/** One issue of a Standard Schema check as the API's detail: its path from the body's root (`prefix`), and its message. */
export function toIssue(issue: StandardSchemaV1.Issue, prefix: readonly (string | number)[]): Issue {
  const path: (string | number)[] = [...prefix];
  for (const segment of issue.path ?? []) {
    const key = typeof segment === "object" && segment !== null ? segment.key : segment;
    path.push(typeof key === "number" ? key : String(key));
  }
  return { path, message: issue.message };
}

/** A check's issues in one sentence, for a refusal's message or a failed attempt's error. */
export function describeIssues(what: string, issues: readonly Issue[]): string {
  const listed = issues.slice(0, 5).map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
  return `${what} does not match its schema: ${listed}${issues.length > 5 ? `; and ${issues.length - 5} more` : ""}`;
}

/** What `GET /openapi.json` says of one kind under `"x-kinds"`. */
export interface KindJsonSchemas {
  payload: Record<string, unknown> | null;
  result: Record<string, unknown> | null;
}

/**
 * The declared kinds' schemas as JSON Schema (draft 2020-12, OpenAPI 3.1's own), through Standard
 * JSON Schema (`~standard.jsonSchema`, which zod 4 implements, among others): null for a schema that
 * does not offer it or refuses to convert (a transform, a custom check). A schema's input is what is
 * checked and stored, so its input side is the one given.
 */
export function kindsJsonSchema(kinds: KindSchemas | undefined): Record<string, KindJsonSchemas> {
  const out: Record<string, KindJsonSchemas> = {};
  for (const [kind, schema] of Object.entries(kinds ?? {})) out[kind] = { payload: jsonSchemaOf(schema.payload), result: schema.result ? jsonSchemaOf(schema.result) : null };
  return out;
}

function jsonSchemaOf(schema: StandardSchemaV1): Record<string, unknown> | null {
  const converter = (schema["~standard"] as Partial<StandardJSONSchemaV1.Props>).jsonSchema;
  if (typeof converter?.input !== "function") return null;
  try {
    return converter.input({ target: "draft-2020-12" });
  } catch {
    return null; // a schema its library cannot express in JSON Schema
  }
}

/**
 * A sharded batch's payload refusals, each by one shard of its part of the batch (`at`: the batch's
 * index of each of the part's items), as one refusal of the whole batch: every issue, its path's
 * item index (`jobs`, i, …) the batch's, in the batch's order.
 */
export function wholeBatchRefusal(parts: readonly { error: ErrorBody; at: readonly number[] }[]): ErrorBody {
  const issues: Issue[] = [];
  for (const { error, at } of parts) {
    for (const issue of Array.isArray(error.details) ? error.details : []) {
      const [field, index, ...rest] = issue.path;
      issues.push(field === "jobs" && typeof index === "number" && at[index] !== undefined ? { path: ["jobs", at[index]!, ...rest], message: issue.message } : issue);
    }
  }
  const item = (issue: Issue) => (typeof issue.path[1] === "number" ? issue.path[1] : 0);
  issues.sort((a, b) => item(a) - item(b));
  return { code: "invalid_payload", message: describeIssues("payloads of the batch", issues), details: issues };
}
