/**
 * A pull consumer's completions of jobs of a kind with a result schema (docs/api.md "Typed kinds"):
 * the result is checked before the fenced write, so a refusal (`invalid_payload`) writes nothing and
 * the lease is kept. Only a lane that declares a result schema reads a job's kind for it (its kind
 * column alone, a completion); the fence still judges the token after the check.
 */
import type { ErrorBody } from "../../shared/errors.js";
import type { AckItem } from "../../shared/schemas.js";
import type { Checked, KindChecks } from "./kind-checks.js";

/** What a completion's check reads of its job: its kind (undefined: no such job, which the fence answers). */
export type KindOf = (id: string) => string | undefined;

/** The check of one `complete`'s result. */
export function checkCompletion(kinds: KindChecks, kindOf: KindOf, id: string, result: unknown): Checked {
  if (!kinds.checksResults) return null;
  const kind = kindOf(id);
  return kind === undefined ? null : kinds.result(kind, result);
}

/** The refusals of a batch of acks' completions, by the item's index (null: none); a Promise when a schema checks asynchronously. */
export function checkAckCompletions(kinds: KindChecks, kindOf: KindOf, acks: readonly AckItem[]): ReadonlyMap<number, ErrorBody> | null | Promise<ReadonlyMap<number, ErrorBody> | null> {
  if (!kinds.checksResults) return null;
  const checks: { at: number; checked: Checked }[] = [];
  for (const [at, item] of acks.entries()) {
    if (item.op !== "complete") continue;
    const checked = checkCompletion(kinds, kindOf, item.id, item.result);
    if (checked !== null) checks.push({ at, checked });
  }
  if (checks.length === 0) return null;
  const collect = (answers: Awaited<Checked>[]) => {
    const refused = new Map<number, ErrorBody>();
    answers.forEach((answer, i) => answer && refused.set(checks[i]!.at, answer.error));
    return refused.size === 0 ? null : refused;
  };
  if (!checks.some(({ checked }) => checked instanceof Promise)) return collect(checks.map(({ checked }) => checked as Awaited<Checked>));
  return Promise.all(checks.map(({ checked }) => checked)).then(collect);
}
