/**
 * The sweep of the objects a lane owes its bucket (`payload_objects`, migration 30): an object to
 * delete is deleted, then forgotten; an upload that no instance has under way any more (its instance
 * died, or its write was refused) is kept when its job points at it, else deleted. It runs right
 * after a change let go of objects, at the lane's start (which an alarm armed by each upload brings
 * about after a kill), and at each alarm while a sweep failed.
 */
import { describeError } from "../../shared/describe-error.js";
import { log } from "../../shared/log.js";
import { isHeld, readHeld } from "./held.js";
import type { PayloadBucket } from "./bucket.js";
import * as Q from "./payload-statements.js";

/** How many owed objects one pass takes (R2 deletes up to 1,000 keys a call). */
const SWEEP_BATCH = 1000;

export class PayloadSweep {
  private running: Promise<void> | null = null;
  private again = false;
  /** Objects are owed that a pass has yet to work off (a pass failed, or one is asked for). */
  pending = false;

  constructor(
    private readonly lane: string,
    private readonly sql: SqlStorage,
    private readonly bucket: PayloadBucket | undefined,
    private readonly inFlight: ReadonlySet<string>,
  ) {}

  /**
   * Uploads whose writes are done: each one's record is forgotten when its job points at it, else
   * turned into a deletion. One transaction; answers how many are to delete.
   */
  settle(keys: readonly string[], owners?: readonly string[]): number {
    let owed = 0;
    for (const key of keys) {
      if (this.owned(key, owners)) this.sql.exec(Q.FORGET_SQL, key);
      else {
        this.sql.exec(Q.TO_DELETE_SQL, key);
        owed++;
      }
    }
    return owed;
  }

  /** A pass soon (after the caller's transaction commits): a second ask while one runs runs another after it. */
  soon(): void {
    this.pending = true;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = Promise.resolve()
      .then(() => this.pass())
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.soon();
        }
      });
  }

  /** Resolves once no pass runs (for tests and the bench). */
  async settled(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Works off what is owed, a batch at a time; a failure leaves it owed, for the next pass. */
  private async pass(): Promise<void> {
    if (!this.bucket) return;
    try {
      for (;;) {
        const rows = this.sql.exec<{ key: string; state: string }>(Q.OWED_SQL, SWEEP_BATCH).toArray();
        const doomed: string[] = [];
        for (const { key, state } of rows) {
          if (state === "deleting") doomed.push(key);
          else if (!this.inFlight.has(key)) {
            if (this.settle([key]) > 0) doomed.push(key);
          }
        }
        // An object a dead-letter copy still owes its dead-letter lane is the copy's now: it goes once
        // the copy is delivered (`released`), not with its job.
        const forCopies = doomed.length === 0 ? new Set<string>() : this.heldForCopies(doomed);
        for (const key of forCopies) this.sql.exec(Q.FORGET_SQL, key);
        const gone = forCopies.size === 0 ? doomed : doomed.filter((key) => !forCopies.has(key));
        if (gone.length > 0) {
          await this.bucket.delete(gone);
          this.sql.exec(Q.DELETED_SQL, JSON.stringify(gone));
        }
        if (rows.length < SWEEP_BATCH) break;
        if (doomed.length === 0) break; // only uploads under way are left
      }
      this.pending = false;
    } catch (error) {
      log({ event: "lane.payload_sweep_failed", lane: this.lane, message: describeError(error) });
    }
  }

  /**
   * Dead-letter copies that held these objects were delivered: each one that no job points at and no
   * other copy holds is owed a deletion (in the caller's transaction); answers how many.
   */
  released(keys: readonly string[], now: number): number {
    const held = this.heldForCopies(keys);
    let owed = 0;
    for (const key of keys) {
      if (held.has(key) || this.owned(key)) continue;
      this.sql.exec(Q.OWE_DELETION_SQL, key, now);
      owed++;
    }
    return owed;
  }

  private heldForCopies(keys: readonly string[]): Set<string> {
    return new Set(this.sql.exec<{ key: string }>(Q.HELD_FOR_COPIES_SQL, JSON.stringify(keys)).toArray().map((r) => r.key));
  }

  /**
   * Whether a job points at the key: the one the key names (a key is `<object>/<job id>/<nonce>/<name>`),
   * or one of `owners` (a debounced enqueue's upload belongs to the queued job it replaced).
   */
  private owned(key: string, owners: readonly string[] = []): boolean {
    for (const id of [key.split("/")[1]!, ...owners]) {
      const row = this.sql.exec<{ payload: string; result: string | null }>(Q.JOB_COLUMNS_BY_ID_SQL, id).toArray()[0];
      if (row && ((isHeld(row.payload) && readHeld(row.payload).key === key) || (isHeld(row.result) && readHeld(row.result).key === key))) return true;
    }
    return false;
  }
}
