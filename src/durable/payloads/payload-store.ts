/**
 * Big payloads and results in R2 (docs/api.md "Big payloads"): the claim check. An object is uploaded
 * before the row that points at it is written, and deleted after the row that pointed at it is gone,
 * never before; `payload_objects` (migration 30) records each upload before it starts and each object
 * owed a deletion in the transaction that let go of it, so that a kill anywhere leaves a row the
 * sweep works off (payload-sweep.ts), never an object that no one remembers.
 */
import type { Clock, Entropy } from "../../shared/clock.js";
import { MAX_PAYLOAD_BYTES } from "../../shared/defaults.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import type { Job, Json } from "../../shared/job.js";
import { utf8Length } from "../../shared/json.js";
import { MAX_HELD_PAYLOAD_BYTES } from "../../shared/payload-ref.js";
import { heldText, isHeld, keyOfRef, readHeld } from "./held.js";
import * as Q from "./payload-statements.js";
import type { PayloadBucket } from "./bucket.js";
import { PayloadSweep } from "./payload-sweep.js";
import { registerPayloadStore } from "./owed-deletions.js";

/** Where a job's payload or result is: its JSON text at hand, or the key of its object. */
export type PayloadSource = { json: string } | { key: string };

const encoder = new TextEncoder();

/** The SHA-256 of a text, in hex. */
async function sha256(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
  let hex = "";
  for (const byte of digest) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

export class PayloadStore {
  /** The most a payload or result may hold here: 16 MiB with a bucket, else undefined (the 128 KiB of every value). */
  readonly heldLimit: number | undefined;
  /** Keys whose upload this instance has under way: the sweep leaves them be. */
  readonly inFlight = new Set<string>();
  readonly sweep: PayloadSweep;
  private holds: boolean | undefined;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clock: Clock,
    private readonly entropy: Entropy,
    private readonly objectName: string,
    private readonly bucket: PayloadBucket | undefined,
    /** Brings the lane back by then at the latest, should this instance die with an upload under way (wake.ts). */
    private readonly armNoLaterThan: (at: number) => void,
  ) {
    this.heldLimit = bucket === undefined ? undefined : MAX_HELD_PAYLOAD_BYTES;
    this.sweep = new PayloadSweep(objectName, storage.sql, bucket, this.inFlight);
    registerPayloadStore(storage.sql, this);
  }

  /** Whether the lane has ever held an object (read once per instance): a lane that never has owes nothing after a deletion. */
  get mayHold(): boolean {
    return (this.holds ??= this.storage.sql.exec<{ holds: number }>(Q.HOLDS_SQL).one().holds === 1);
  }

  /**
   * Uploads a value's JSON text (over 128 KiB) under a key of its job (`name`: "payload", or
   * "result-<generation>"), its upload recorded first and made durable; answers the column text that
   * points at it. `identity`: the text whose hash says two payloads are the same (canonical JSON).
   * The caller writes the row, then calls `landed` with the key. A failed upload owes a deletion (it
   * may have landed all the same) and answers 503 `payload_store_unavailable`.
   */
  async hold(jobId: string, name: string, text: string, identity: string = text): Promise<Result<string>> {
    const bucket = this.bucket!;
    const key = `${this.objectName}/${jobId}/${this.entropy.id()}/${name}`;
    const now = this.clock.now();
    this.storage.transactionSync(() => {
      this.storage.sql.exec(Q.RECORD_UPLOAD_SQL, key, now);
      this.storage.sql.exec(Q.MARK_HOLDS_SQL, now);
    });
    this.holds = true;
    this.inFlight.add(key);
    // Should this instance die from here on, its alarm brings the lane back to sweep (its start sweeps).
    this.armNoLaterThan(now + UPLOAD_SWEEP_AFTER_MS);
    try {
      const hash = await sha256(identity);
      await this.storage.sync(); // the record is durable before any byte of the object is
      await bucket.put(key, text, { httpMetadata: { contentType: "application/json" } });
      return ok(heldText({ key, bytes: utf8Length(text), hash }));
    } catch (error) {
      this.landed([key]);
      return fail("payload_store_unavailable", `a ${name.startsWith("result") ? "result" : "payload"} over ${MAX_PAYLOAD_BYTES} bytes could not be stored: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /**
   * The uploads of `keys` are over and the writes that may point at them are done: what no job owns
   * is deleted. Call it in the write's own transaction when the write is in this turn, so that no
   * kill comes between them (`owners`: other jobs the write may have pointed at them, as a debounce's).
   */
  landed(keys: readonly string[], owners?: readonly string[]): void {
    for (const key of keys) this.inFlight.delete(key);
    if (this.sweep.settle(keys, owners) > 0) this.sweep.soon();
  }

  /** Dead-letter copies that held these objects were delivered (deadletters/outbox.ts): those nothing holds now go, after the caller's transaction. */
  releasedByCopies(keys: readonly string[]): void {
    if (keys.length > 0 && this.sweep.released(keys, this.clock.now()) > 0) this.sweep.soon();
  }

  /** At the lane's start: whatever is owed (by an instance that died) is worked off, in a lane that has ever held an object. */
  sweepOwed(): void {
    if (this.bucket !== undefined && this.mayHold) this.sweep.soon();
  }

  /** The generation of a job's latest claim (null: no such job): a result's key names its attempt. */
  generationOf(jobId: string): number | null {
    return this.storage.sql.exec<{ generation: number }>(Q.GENERATION_SQL, jobId).toArray()[0]?.generation ?? null;
  }

  /** Runs `body` in one transaction. */
  transaction<T>(body: () => T): T {
    return this.storage.transactionSync(body);
  }

  /** The hash two payloads are compared by (identity), of their canonical JSON. */
  hashOf(identity: string): Promise<string> {
    return sha256(identity);
  }

  /** A job as an answer of one job carries it: its payload and result whole, read from the bucket when held there. */
  async whole<T extends Pick<Job, "payload" | "payloadRef" | "result" | "resultRef">>(job: T): Promise<T> {
    if (job.payloadRef === null && job.resultRef === null) return job;
    const [payload, result] = await Promise.all([this.valueOf(job.payloadRef), this.valueOf(job.resultRef)]);
    return { ...job, ...(payload === undefined ? {} : { payload, payloadRef: null }), ...(result === undefined ? {} : { result, resultRef: null }) };
  }

  /** Where job `id`'s payload or result is (null: no such job), for the routes that stream them. */
  sourceOfJob(id: string, which: "payload" | "result"): PayloadSource | null {
    const row = this.storage.sql.exec<{ payload: string; result: string | null }>(Q.JOB_COLUMNS_BY_ID_SQL, id).toArray()[0];
    return row ? this.sourceOf(which === "payload" ? row.payload : row.result) : null;
  }

  /** Where a column's value is: its JSON (null for no value), or its object's key. */
  sourceOf(column: string | null): PayloadSource {
    if (column === null) return { json: "null" };
    return isHeld(column) ? { key: readHeld(column).key } : { json: column };
  }

  /** An object's text by its key (null: not in the bucket). */
  async text(key: string): Promise<string | null> {
    const object = await this.bucket?.get(key);
    return object ? object.text() : null;
  }

  private async valueOf(ref: Job["payloadRef"]): Promise<Json | undefined> {
    if (ref === null) return undefined;
    const key = keyOfRef(ref);
    if (key === undefined) throw new Error("a payload reference without its key");
    const object = await this.bucket?.get(key);
    // Never deleted before its row: a missing object is a bucket changed behind the lane's back.
    if (!object) throw new Error(`the object ${key} is missing from PAYLOADS`);
    return JSON.parse(await object.text()) as Json;
  }
}

/** How long an upload may take before a lane that died meanwhile comes back to sweep it. */
export const UPLOAD_SWEEP_AFTER_MS = 60_000;
