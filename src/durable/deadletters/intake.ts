/**
 * The dead-letter lane's side (docs/api.md "Dead letters"): copies sent by other lanes' outboxes
 * (outbox.ts), each enqueued as a job of kind `deadletter` with the enqueue's defaults, under the id
 * the sender made (`<lane>.<id>`, which may be longer than a name and hold a fire's `@`: no client's
 * enqueue may choose such an id, so it is set here, after the spec). A copy is never refused for its
 * size: its payload is the failed job's, whole, and the sender's text is stored as it came, in the
 * lane's bucket when over 128 KiB and the lane binds `PAYLOADS`, in its row otherwise. An id
 * that exists stays as it is and counts as the copy; the same copy delivered again is answered as it
 * was (`same`), so that the sender counts it once whatever answer it lost.
 */
import { z } from "zod";
import type { Clock } from "../../shared/clock.js";
import { DEAD_LETTER_KIND, MAX_DEAD_LETTER_ID_CHARS } from "../../shared/dead-letters.js";
import { OUTBOX_BATCH } from "../../shared/defaults.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import { toSpec } from "../../shared/job-spec.js";
import { JobId } from "../../shared/schemas.js";
import { MAX_SHARDS } from "../../shared/shards.js";
import type { Json } from "../../shared/job.js";
import type { DeadLetterAnswer, DeadLetterShardAnswer } from "../../routing/dead-letter-routing.js";
import { parse } from "../input.js";
import { isBig } from "../payloads/held.js";
import { writeHeld } from "../payloads/held-enqueue.js";
import type { PayloadStore } from "../payloads/payload-store.js";
import type { ShardState } from "../shards/shard-state.js";
import type { Inserted, JobSpec } from "../store/job-row.js";
import type { JobStore } from "../store/job-store.js";

/** What a sender's call carries: the shard count it routed by, and the copies (payloads as JSON text, checked here). */
const DeadLetterRequest = z.strictObject({
  shards: z.number().int().min(1).max(MAX_SHARDS),
  copies: z
    .array(
      z.strictObject({
        id: JobId.refine((id) => id.length <= MAX_DEAD_LETTER_ID_CHARS),
        payload: z.string().refine(isJsonText, "must be JSON text"),
      }),
    )
    .min(1)
    .max(OUTBOX_BATCH),
});

function isJsonText(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

export interface DeadLetterIntakeHost {
  readonly store: JobStore;
  readonly shard: ShardState;
  readonly payloads: PayloadStore;
}

/**
 * The longest copy id whose copy over 128 KiB is kept in the bucket: its object's key names the id,
 * and R2 keys hold at most 1,024 bytes. A longer id's copy (a copy of a copy of …) is kept in its row.
 */
const MAX_HELD_COPY_ID_CHARS = 512;

export class DeadLetterIntake {
  constructor(
    private readonly clock: Clock,
    private readonly host: DeadLetterIntakeHost,
  ) {}

  /**
   * Writes the copies of one call, each answered; a call routed by a stale shard count is refused
   * whole. Copies over 128 KiB in a lane with `PAYLOADS` go to the bucket as an enqueue's payload
   * does (after the others, out of turn); every other copy is written in one transaction, in turn.
   * An id reserved here for another shard (a job of it is there, or a refused enqueue left the
   * reservation) is answered `reserved`: the router asks that shard (routing/dead-letter-routing.ts).
   * A refusal other than the id's conflict fails the call: the sender tries it again.
   */
  receive(input: unknown): Result<DeadLetterShardAnswer[]> | Promise<Result<DeadLetterShardAnswer[]>> {
    const request = parse(DeadLetterRequest, input);
    if (!request.ok) return request;
    const { store, shard, payloads } = this.host;
    const shards = shard.count();
    if (request.value.shards !== shards) return fail("wrong_shard", `lane ${shard.lane} has ${shards} shards; these copies were routed for ${request.value.shards}`, { shards });
    const now = this.clock.now();
    const answers: (DeadLetterShardAnswer | null)[] = [];
    const specs: { at: number; spec: JobSpec }[] = [];
    const held: { at: number; spec: JobSpec }[] = [];
    for (const copy of request.value.copies) {
      const owned = this.owned(copy.id);
      if (!owned.ok) return owned;
      if (owned.value === "reserved") {
        answers.push("reserved");
        continue;
      }
      const spec = copySpec(copy.id, copy.payload, now, store.lane);
      if (copy.id.length <= MAX_HELD_COPY_ID_CHARS && isBig(copy.payload, payloads.heldLimit)) held.push({ at: answers.length, spec: { ...spec, heldPayload: true } });
      else specs.push({ at: answers.length, spec });
      answers.push(null);
    }
    // The flush that follows the call (rpc/gate.ts) starts them where an executor here runs their kind.
    const refusals: Result<never>[] = [];
    store.transactionSync(() => {
      for (const { at, spec } of specs) {
        const answer = answerOf(store.insertJob(spec, now));
        if (answer.ok) answers[at] = answer.value;
        else refusals.push(answer);
      }
    });
    if (refusals.length > 0) return refusals[0]!;
    if (held.length === 0) return ok(answers as DeadLetterShardAnswer[]);
    return this.writeHeld(held, answers, now);
  }

  /** The copies over 128 KiB, each uploaded, then written (payloads/held-enqueue.ts), one after another. */
  private async writeHeld(held: readonly { at: number; spec: JobSpec }[], answers: (DeadLetterShardAnswer | null)[], now: number): Promise<Result<DeadLetterShardAnswer[]>> {
    const { store, payloads } = this.host;
    for (const { at, spec } of held) {
      // Checked again in the write's turn: the upload gave other calls theirs (an enqueue may have reserved the id meanwhile).
      const write = (pointed: JobSpec): Result<DeadLetterShardAnswer> => {
        const owned = this.owned(spec.id);
        if (!owned.ok) return owned;
        return owned.value === "reserved" ? ok("reserved") : answerOf(store.insertJob(pointed, now));
      };
      const done = await writeHeld(payloads, store, spec, JSON.parse(spec.payload) as Json, write, () => []);
      if (!done.ok) return done;
      answers[at] = done.value;
    }
    return ok(answers as DeadLetterShardAnswer[]);
  }

  /** Whether this shard writes the copy `id` (`here`), or its id is reserved here for another shard (`reserved`); a refusal otherwise. */
  private owned(id: string): Result<"here" | "reserved"> {
    const owned = this.host.shard.check(id, id);
    if (owned.ok) return ok("here");
    return (owned.error.details as { reservedFor?: number } | undefined)?.reservedFor !== undefined ? ok("reserved") : owned;
  }
}

/** What an insert of a copy answers: written now, written before from this very copy, or another job holds the id (which stays); any other refusal is the call's. */
function answerOf(inserted: Result<Inserted>): Result<DeadLetterAnswer> {
  if (inserted.ok) return ok(inserted.value.status === "queued" ? "created" : "same");
  return inserted.error.code === "job_conflict" ? ok("exists") : inserted;
}

/** A copy's job: the enqueue's defaults (no queue, priority 0), its id and payload text as the sender made them. */
function copySpec(id: string, payload: string, now: number, lane: string): JobSpec {
  const spec = toSpec({ kind: DEAD_LETTER_KIND, payload: null }, now, () => id, lane);
  if (!spec.ok) throw new Error(`a copy's spec was refused: ${spec.error.message}`);
  return { ...spec.value, id, payload };
}
