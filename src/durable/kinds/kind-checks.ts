/**
 * The lane's checks of its declared kinds (docs/api.md "Typed kinds"): a payload at every enqueue, a
 * result at every completion. Each check answers null (nothing to check, or it passed), a refusal
 * (`invalid_payload`, each issue's path from the body's root), or a Promise of either when the
 * schema's check is asynchronous (Standard Schema allows it): the caller waits before its write
 * transaction. A schema's output is never used: what is stored is what was sent.
 *
 * Cost: a lane that declares no kinds pays one null comparison a check; an undeclared kind of a lane
 * that declares some, one map lookup.
 */
import { describeError } from "../../shared/describe-error.js";
import { fail, type ErrorBody, type Issue } from "../../shared/errors.js";
import { describeIssues, toIssue, type KindSchemas, type StandardSchemaV1 } from "../../shared/kinds.js";
import type { Executor, ExecutorRegistry } from "../attempts/executors.js";
import { batchExecutor, batchOptionsOf } from "../attempts/batch-executor.js";
import type { BatchJobAnswer } from "../../shared/batch-answers.js";

export type Refused = { ok: false; error: ErrorBody };

/** A check's answer: null when it passed (or there was nothing to check), else the refusal; a Promise of either when the schema checks asynchronously. */
export type Checked = Refused | null | Promise<Refused | null>;

type Path = readonly (string | number)[];

const PAYLOAD: Path = ["payload"];
const RESULT: Path = ["result"];

export class KindChecks {
  private readonly payloads: ReadonlyMap<string, StandardSchemaV1> | null;
  private readonly results: ReadonlyMap<string, StandardSchemaV1> | null;

  constructor(kinds: KindSchemas | undefined) {
    const entries = Object.entries(kinds ?? {});
    this.payloads = entries.length === 0 ? null : new Map(entries.map(([kind, schema]) => [kind, schema.payload]));
    const results = entries.flatMap(([kind, schema]) => (schema.result ? [[kind, schema.result] as const] : []));
    this.results = results.length === 0 ? null : new Map(results);
  }

  /** Whether any kind declares a result schema: only then does a completion read its job's kind. */
  get checksResults(): boolean {
    return this.results !== null;
  }

  /** One enqueue's payload (absent: null, as it is stored); `prefix`: the payload's path in its body. */
  payload(kind: string, payload: unknown, prefix: Path = PAYLOAD): Checked {
    const schema = this.payloads?.get(kind);
    if (schema === undefined) return null;
    return refusal(issuesOf(schema, payload ?? null, prefix), () => `payload of kind ${kind}`);
  }

  /** A batch's payloads, all of them: every issue of every item (its path naming the item: `jobs`, i, `payload`, …). */
  batch(jobs: readonly { kind: string; payload?: unknown }[]): Checked {
    if (this.payloads === null) return null;
    const found: (Issue[] | null | Promise<Issue[] | null>)[] = [];
    for (const [i, job] of jobs.entries()) {
      const schema = this.payloads.get(job.kind);
      if (schema !== undefined) found.push(issuesOf(schema, job.payload ?? null, ["jobs", i, "payload"]));
    }
    if (found.length === 0) return null;
    const what = () => "payloads of the batch";
    if (!found.some((f) => f instanceof Promise)) return refusal((found as (Issue[] | null)[]).flatMap((f) => f ?? []), what);
    return Promise.all(found).then((all) => refusal(all.flatMap((f) => f ?? []), what));
  }

  /** A completion's result (absent: null, as it is stored) for a job of `kind`. */
  result(kind: string, result: unknown): Checked {
    const schema = this.results?.get(kind);
    if (schema === undefined) return null;
    return refusal(issuesOf(schema, result ?? null, RESULT), () => `result of kind ${kind}`);
  }

  /**
   * The executors, each of a kind with a result schema made to check its result before it is
   * recorded: a result that breaks it fails the attempt as a throw would, its error naming the issues.
   * A batch executor's `run` is checked answer by answer: a job whose result breaks it fails alone
   * (retried while attempts remain), the others complete.
   */
  executors<E>(registry: ExecutorRegistry<E>): ExecutorRegistry<E> {
    if (this.results === null) return registry;
    const checked: Record<string, Executor<E>> = { ...registry };
    for (const [kind, run] of Object.entries(registry)) {
      if (!this.results.has(kind)) continue;
      const batch = batchOptionsOf(run);
      checked[kind] = batch !== null ? batchExecutor({ ...batch, run: async (jobs, ctx) => this.batchAnswers(kind, await batch.run(jobs, ctx)) }) : async (payload, ctx) => {
        const value: unknown = await run(payload, ctx);
        const refused = await this.result(kind, value);
        if (refused) throw new Error(refused.error.message);
        return value;
      };
    }
    return checked;
  }

  /** A batch's answers with each completion whose result breaks its kind's schema made a failure naming the issues (anything not an array of answers is left to `batchEndings`). */
  private async batchAnswers(kind: string, answers: BatchJobAnswer[]): Promise<BatchJobAnswer[]> {
    if (!Array.isArray(answers)) return answers;
    return Promise.all(answers.map(async (answer): Promise<BatchJobAnswer> => {
      if (typeof answer !== "object" || answer === null || answer.ok !== true) return answer;
      const refused = await this.result(kind, answer.result);
      return refused ? { ok: false, error: refused.error.message } : answer;
    }));
  }
}

/**
 * The issues of `value` against `schema`, their paths under `prefix`; null: none. A schema whose
 * check throws (or rejects) refuses the value with one issue saying so: the value is the caller's,
 * so its refusal is a 400 `invalid_payload`, never a 500.
 */
function issuesOf(schema: StandardSchemaV1, value: unknown, prefix: Path): Issue[] | null | Promise<Issue[] | null> {
  let result: StandardSchemaV1.Result<unknown> | Promise<StandardSchemaV1.Result<unknown>>;
  try {
    result = schema["~standard"].validate(value);
  } catch (error) {
    return [thrown(error, prefix)];
  }
  return result instanceof Promise ? result.then((r) => listed(r, prefix), (error: unknown) => [thrown(error, prefix)]) : listed(result, prefix);
}

function thrown(error: unknown, prefix: Path): Issue {
  return { path: [...prefix], message: `its schema's check threw: ${describeError(error)}` };
}

function listed(result: StandardSchemaV1.Result<unknown>, prefix: Path): Issue[] | null {
  return result.issues === undefined ? null : result.issues.map((issue) => toIssue(issue, prefix));
}

function refusal(issues: Issue[] | null | Promise<Issue[] | null>, what: () => string): Checked {
  if (issues instanceof Promise) return issues.then((found) => refusal(found, what) as Refused | null);
  return issues === null || issues.length === 0 ? null : fail("invalid_payload", describeIssues(what(), issues), issues);
}
