/**
 * Durable steps (docs/api.md "Checkpoints"): what an attempt records for its job — named checkpoints and
 * its progress — written through the fence, each checkpoint stamped with the writing attempt's
 * generation, and read back up to a reader's own generation. Completion deletes them (attempts/fenced-writes.ts,
 * in the completion's transaction); deleting a job deletes them (store/deletion.ts).
 */
import type { Clock } from "../../shared/clock.js";
import { MAX_CHECKPOINT_BYTES_PER_JOB, MAX_CHECKPOINTS_PER_JOB } from "../../shared/defaults.js";
import { fail, ok, type ErrorBody, type Result } from "../../shared/errors.js";
import type { Checkpoint, CheckpointInfo, ClaimedJob, Job, Json, PulledJob } from "../../shared/job.js";
import * as Q from "./checkpoint-statements.js";
import type { FenceOp } from "../attempts/fence.js";
import { firstJobRow, toJob, type JobRow } from "../store/job-row.js";
import { CHECKPOINT_ENTRY_OVERHEAD } from "../store/page.js";

/** What the checkpoints of these jobs add to a claim's answer, by job seq (jobs with none left out). */
export function checkpointBytes(sql: SqlStorage, seqs: readonly number[]): Map<number, number> {
  const bytes = new Map<number, number>();
  if (seqs.length === 0) return bytes;
  for (const row of sql.exec<{ seq: number; bytes: number }>(Q.CHECKPOINT_BYTES_SQL, JSON.stringify(seqs), CHECKPOINT_ENTRY_OVERHEAD)) bytes.set(row.seq, row.bytes);
  return bytes;
}

/** A checkpoint an in-process attempt records: its job (id and seq), its token, the name and the value's JSON. */
export interface InProcessRecord {
  id: string;
  seq: number;
  token: string;
  name: string;
  json: string;
}

export interface CheckpointStoreOptions {
  /** The lane's name, as jobs carry it. */
  lane: string;
  /**
   * The answer to a fenced write that the fence refused (attempts/fenced-writes.ts `missed`): why, and for the
   * holder of a cancel-requested job, its settlement `cancelled`.
   */
  missed(id: string, token: string, op: FenceOp): Result<Job>;
  /** Whether `token` holds the job's lease now, as the fence says (to tell a limit's refusal from the fence's). */
  holds(id: string, token: string): boolean;
}

export class CheckpointStore {
  private readonly sql: SqlStorage;

  constructor(
    storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly options: CheckpointStoreOptions,
  ) {
    this.sql = storage.sql;
  }

  /**
   * Records `name` = `valueJson` for the attempt holding `token`, in one fenced statement. A refusal
   * records nothing: the fence's reasons, or `checkpoint_limit`.
   */
  save(id: string, token: string, name: string, valueJson: string): Result<CheckpointInfo> {
    const now = this.clock.now();
    const row = this.sql
      .exec<{ generation: number; updated_at: number }>(Q.SAVE_CHECKPOINT_SQL, id, token, now, name, valueJson, MAX_CHECKPOINTS_PER_JOB, MAX_CHECKPOINT_BYTES_PER_JOB)
      .toArray()[0];
    if (row) return ok({ name, generation: row.generation, updatedAt: row.updated_at });
    if (this.options.holds(id, token)) {
      return fail(
        "checkpoint_limit",
        `checkpoint ${name} would take job ${id} past ${MAX_CHECKPOINTS_PER_JOB} checkpoint names or ${MAX_CHECKPOINT_BYTES_PER_JOB} bytes of checkpoint values`,
      );
    }
    return this.refused(id, token, "checkpoint");
  }

  /**
   * Records `name` = `valueJson` for an in-process attempt (its job's `seq` known from the claim), in
   * one fenced statement that answers nothing: the hot path of `ctx.step`. The attempt keeps the job's
   * limits itself (steps.ts).
   */
  record(record: InProcessRecord): Result<null> {
    const { id, seq, token, name, json } = record;
    const written = this.sql.exec(Q.RECORD_CHECKPOINT_SQL, id, token, this.clock.now(), name, json, seq).rowsWritten;
    return written > 0 ? ok(null) : this.refused(id, token, "checkpoint");
  }

  /**
   * The records of several in-process attempts in one statement, each through the fence by its own
   * token; answers each one's result in order (a refusal says why, as `record` would).
   */
  recordMany(records: readonly InProcessRecord[]): Result<null>[] {
    const list = JSON.stringify(records.map((r) => [r.seq, r.id, r.token, r.name, r.json]));
    const written = new Set(
      this.sql.exec<{ job_seq: number; name: string }>(Q.RECORD_MANY_CHECKPOINTS_SQL, list, this.clock.now()).toArray().map((r) => `${r.job_seq}/${r.name}`),
    );
    return records.map((r) => (written.has(`${r.seq}/${r.name}`) ? ok(null) : this.refused(r.id, r.token, "checkpoint")));
  }

  /** Records the job's progress for the attempt holding `token`, in one fenced statement; the lease is kept. */
  progress(id: string, token: string, progressJson: string): Result<Job> {
    const row = firstJobRow(this.sql.exec(Q.SAVE_PROGRESS_SQL, id, token, this.clock.now(), progressJson));
    return row ? ok(toJob(row, this.options.lane)) : this.refused(id, token, "progress");
  }

  /** What an attempt of `generation` reads: the job's checkpoints up to its generation, name → JSON text. */
  recorded(id: string, generation: number): Map<string, string> {
    const recorded = new Map<string, string>();
    for (const { name, value } of this.sql.exec<{ name: string; value: string }>(Q.RECORDED_SQL, id, generation)) recorded.set(name, value);
    return recorded;
  }

  /** Every checkpoint of a job, in name order (the operator's view). */
  list(id: string): Result<Checkpoint[]> {
    const job = this.sql.exec<{ seq: number }>(Q.JOB_SEQ_SQL, id).toArray()[0];
    if (!job) return fail("job_not_found", `no job ${id} in lane ${this.options.lane}`);
    return ok(
      this.sql
        .exec<{ name: string; value: string; generation: number; updated_at: number }>(Q.LIST_CHECKPOINTS_SQL, job.seq)
        .toArray()
        .map((r) => ({ name: r.name, value: JSON.parse(r.value) as Json, generation: r.generation, updatedAt: r.updated_at })),
    );
  }

  /** Just-claimed jobs with what their earlier attempts recorded (`{}` when nothing), in one query. */
  attach(jobs: ClaimedJob[]): Omit<PulledJob, "dependencies">[] {
    if (jobs.length === 0) return [];
    const byJob = new Map<string, Record<string, Json>>();
    const rows = this.sql.exec<{ id: string; name: string; value: string }>(Q.CLAIMED_CHECKPOINTS_SQL, JSON.stringify(jobs.map((j) => j.id)));
    for (const { id, name, value } of rows) {
      let checkpoints = byJob.get(id);
      if (!checkpoints) byJob.set(id, (checkpoints = {}));
      checkpoints[name] = JSON.parse(value) as Json;
    }
    return jobs.map((job) => ({ ...job, checkpoints: byJob.get(job.id) ?? {} }));
  }

  /** The fence refused a write: why (a checkpoint or progress write is never a repeat). */
  private refused(id: string, token: string, op: FenceOp): { ok: false; error: ErrorBody } {
    const missed = this.options.missed(id, token, op);
    return missed.ok ? fail("internal", `a ${op} write cannot be a repeat`) : missed;
  }
}
