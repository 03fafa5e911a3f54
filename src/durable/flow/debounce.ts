/**
 * Debounce (`debounce: {key, delayMs, maxDelayMs}` on enqueue): while a job of the lane with the same
 * key is queued and not yet started, an enqueue with that key replaces it in place — the new
 * request's kind, payload, options and trace context, the same id — and moves its `runAt` to now + `delayMs`, but
 * never past its first enqueue + `maxDelayMs`. Once that job has started, the next enqueue with the
 * key makes a new job. At most one job per key is queued and not yet started (a unique index).
 */
import { ok, type Result } from "../../shared/errors.js";
import type { Job } from "../../shared/job.js";
import { firstJobRow, oneJobRow, toJob, type JobSpec } from "../store/job-row.js";
import type { JobStore } from "../store/job-store.js";
import { keepUpkeep } from "../store/upkeep.js";
import { DEBOUNCE_TARGET_SQL, REPLACE_SQL, COUNT_DEBOUNCED_SQL } from "./debounce-statements.js";

export class Debouncer {
  private readonly sql: SqlStorage;

  constructor(
    storage: DurableObjectStorage,
    private readonly store: JobStore,
  ) {
    this.sql = storage.sql;
  }

  /**
   * Replaces the queued, not yet started job of `spec`'s key with `spec` (its id kept), its runAt
   * capped at its first enqueue + `maxDelayMs`; null when the key has none (a new job is made).
   */
  replace(spec: JobSpec, now: number): Result<{ status: "debounced"; job: Job }> | null {
    if (spec.debounceKey === null) return null;
    const target = firstJobRow(this.sql.exec(DEBOUNCE_TARGET_SQL, spec.debounceKey));
    if (!target) return null;
    const maxDelayMs = (JSON.parse(spec.debounce!) as { maxDelayMs: number | null }).maxDelayMs;
    const deadline = maxDelayMs === null ? null : target.created_at + maxDelayMs;
    const runAt = deadline === null ? spec.runAt : Math.min(spec.runAt, deadline);
    const expiresAt = spec.ttlMs === null ? null : runAt + spec.ttlMs;
    const row = oneJobRow(this.sql.exec(REPLACE_SQL, target.seq, spec.kind, spec.payload, spec.queue, spec.priority, runAt, spec.maxAttempts,
      spec.backoffBaseMs, spec.backoffMaxMs, spec.timeoutMs, spec.maxRecoveries, spec.recoveryWindowMs, spec.ttlMs, expiresAt, spec.debounce, deadline, now, spec.traceparent));
    keepUpkeep(this.sql, [{ old: target, new: row }], now);
    this.sql.exec(COUNT_DEBOUNCED_SQL);
    return ok({ status: "debounced", job: toJob(row, this.store.lane) });
  }
}
