/**
 * Batch acks (docs/api.md "Pull consumers", `POST /v1/lanes/{lane}/acks`): up to 100 complete, fail,
 * release, progress, snooze and wait items, each applied and fenced on its own, exactly as its single route would
 * answer it. The answers come back in request order, one per item.
 *
 * An item that is malformed refuses the whole batch before anything is applied (the schema has
 * checked shapes; here, a result or progress that is not JSON, which only an RPC caller can send).
 * A result or progress over its size limit is that item's `payload_too_large`, as its route's 413.
 */
import type { AckAnswer } from "../../shared/answers.js";
import { MAX_PROGRESS_BYTES } from "../../shared/defaults.js";
import { fail, ok, type ErrorBody, type Result } from "../../shared/errors.js";
import type { Job } from "../../shared/job.js";
import { serializeJson } from "../../shared/json.js";
import type { AckItem } from "../../shared/schemas.js";


/** The fenced writes an ack makes, as the lane's store runs them. */
export interface AckWrites {
  complete(id: string, token: string, resultJson: string): Result<Job>;
  /** Many completions in one statement; answers the ids it settled (the others go again alone, to learn why). */
  completeBatch(items: readonly { id: string; token: string; resultJson: string }[]): Set<string>;
  fail(id: string, token: string, message: string, retry: boolean, retryAfterMs: number | null): Result<Job>;
  release(id: string, token: string): Result<Job>;
  snooze(id: string, token: string, delayMs: number): Result<Job>;
  /** The attempt ends in a wait on a waitpoint of the lane (waits/waits.ts). */
  wait(id: string, token: string, waitpoint: string, timeoutMs: number | undefined): Result<unknown>;
  progress(id: string, token: string, progressJson: string): Result<unknown>;
}

type Prepared = { item: AckItem; json: Result<string> | null };

/**
 * `refused`: completions refused before any write (a result its kind's schema refuses, or one whose
 * upload to R2 failed), by index: each is its item's answer. `held`: completions whose results were
 * uploaded to R2 first (payloads/held-results.ts), by index: the reference each writes.
 */
export function applyAcks(acks: readonly AckItem[], writes: AckWrites, refused: ReadonlyMap<number, ErrorBody> | null = null, held: ReadonlyMap<number, string> | null = null): Result<AckAnswer[]> {
  const prepared: Prepared[] = [];
  for (const [index, item] of acks.entries()) {
    const json = refused?.has(index) ? { ok: false as const, error: refused.get(index)! } : held?.has(index) ? ok(held.get(index)!) :
      item.op === "complete" ? serializeJson(item.result, "result") : item.op === "progress" ? serializeJson(item.progress, "progress", MAX_PROGRESS_BYTES) : null;
    if (json && !json.ok && json.error.code === "invalid_request") {
      const field = item.op === "complete" ? "result" : "progress";
      return fail("invalid_request", `acks[${index}]: ${json.error.message}`, [{ path: ["acks", index, field], message: json.error.message }]);
    }
    prepared.push({ item, json });
  }
  // Items of distinct jobs touch distinct rows, so their order cannot change any answer: their
  // completions go in one statement. With an id repeated, every item goes alone, in order.
  const distinct = new Set(acks.map((a) => a.id)).size === acks.length;
  const settled = distinct ? completeTogether(prepared, writes) : new Set<string>();
  return ok(prepared.map(({ item, json }) => (settled.has(item.id) ? { id: item.id, ok: true } : toAnswer(item.id, applyOne(item, json, writes)))));
}

function completeTogether(prepared: Prepared[], writes: AckWrites): Set<string> {
  const batch: { id: string; token: string; resultJson: string }[] = [];
  for (const { item, json } of prepared) if (item.op === "complete" && json?.ok) batch.push({ id: item.id, token: item.token, resultJson: json.value });
  return batch.length > 1 ? writes.completeBatch(batch) : new Set();
}

function applyOne(item: AckItem, json: Result<string> | null, writes: AckWrites): Result<unknown> {
  switch (item.op) {
    case "complete":
      return json!.ok ? writes.complete(item.id, item.token, json!.value) : json!;
    case "fail":
      return writes.fail(item.id, item.token, item.error, item.retry !== false, item.retryAfterMs ?? null);
    case "release":
      return writes.release(item.id, item.token);
    case "progress":
      return json!.ok ? writes.progress(item.id, item.token, json!.value) : json!;
    case "snooze":
      return writes.snooze(item.id, item.token, item.delayMs);
    case "wait":
      return writes.wait(item.id, item.token, item.waitpoint, item.timeoutMs);
  }
}

function toAnswer(id: string, result: Result<unknown>): AckAnswer {
  return result.ok ? { id, ok: true } : { id, ok: false, error: { code: result.error.code, message: result.error.message } };
}
