/**
 * The checkpoint records of in-process attempts made in one turn, written together. While several
 * attempts run, a step's record waits for the end of the turn (a microtask) and goes with the others
 * in one fenced statement, each row by its own token: a thousand jobs of one step each cost a few
 * statements, not a thousand. The step's promise settles only once its record has landed or been
 * refused, so nothing a step promises changes; an attempt alone needs no batch (the dispatcher then
 * writes at once).
 */
import type { Result } from "../../shared/errors.js";
import type { CheckpointStore, InProcessRecord } from "./checkpoints.js";

interface Pending {
  record: InProcessRecord;
  resolve(result: Result<null>): void;
  reject(error: unknown): void;
}

export class RecordBatch {
  private pending: Pending[] = [];

  constructor(private readonly checkpoints: CheckpointStore) {}

  /** Queues a record for the end of this turn; settles with its result. */
  add(record: InProcessRecord): Promise<Result<null>> {
    return new Promise((resolve, reject) => {
      if (this.pending.push({ record, resolve, reject }) === 1) queueMicrotask(() => this.flush());
    });
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = [];
    try {
      const results = batch.length === 1 ? [this.checkpoints.record(batch[0]!.record)] : this.checkpoints.recordMany(batch.map((p) => p.record));
      batch.forEach((p, i) => p.resolve(results[i]!));
    } catch (error) {
      // A bug, not a refusal: each step rejects with it, and its attempt fails like any throw.
      for (const p of batch) p.reject(error);
    }
  }
}
