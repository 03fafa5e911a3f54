/**
 * The dead-letter lane's side (docs/api.md "Dead letters"): copies sent by other lanes' outboxes
 * (outbox.ts), each enqueued as a job of kind `deadletter` with the enqueue's defaults, under the id
 * the sender made (`<lane>.<id>`, which may be longer than a name and hold a fire's `@`: no client's
 * enqueue may choose such an id, so it is set here, after the spec). A copy is never refused for its
 * size: its payload is the failed job's, whole, and the sender's text is stored as it came. An id
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
import type { DeadLetterAnswer } from "../../routing/dead-letter-routing.js";
import { parse } from "../input.js";
import type { ShardState } from "../shards/shard-state.js";
import type { JobSpec } from "../store/job-row.js";
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
}

export class DeadLetterIntake {
  constructor(
    private readonly clock: Clock,
    private readonly host: DeadLetterIntakeHost,
  ) {}

  /** Writes the copies of one call (one transaction), each answered; a call routed by a stale shard count is refused whole. */
  receive(input: unknown): Result<DeadLetterAnswer[]> {
    const request = parse(DeadLetterRequest, input);
    if (!request.ok) return request;
    const { store, shard } = this.host;
    const shards = shard.count();
    if (request.value.shards !== shards) return fail("wrong_shard", `lane ${shard.lane} has ${shards} shards; these copies were routed for ${request.value.shards}`, { shards });
    const now = this.clock.now();
    const answers: (DeadLetterAnswer | null)[] = [];
    const specs: { at: number; spec: JobSpec }[] = [];
    for (const copy of request.value.copies) {
      const owned = shard.check(copy.id, copy.id);
      if (!owned.ok) {
        // Reserved here for another shard: a job of that id is written there (or being written), which counts as the copy.
        if ((owned.error.details as { reservedFor?: number } | undefined)?.reservedFor !== undefined) answers.push("exists");
        else return owned;
        continue;
      }
      specs.push({ at: answers.length, spec: copySpec(copy.id, copy.payload, now, store.lane) });
      answers.push(null);
    }
    // The flush that follows the call (rpc/gate.ts) starts them where an executor here runs their kind.
    store.transactionSync(() => {
      for (const { at, spec } of specs) {
        const inserted = store.insertJob(spec, now);
        answers[at] = !inserted.ok ? "exists" : inserted.value.status === "queued" ? "created" : "same";
      }
    });
    return ok(answers as DeadLetterAnswer[]);
  }
}

/** A copy's job: the enqueue's defaults (no queue, priority 0), its id and payload text as the sender made them. */
function copySpec(id: string, payload: string, now: number, lane: string): JobSpec {
  const spec = toSpec({ kind: DEAD_LETTER_KIND, payload: null }, now, () => id, lane);
  if (!spec.ok) throw new Error(`a copy's spec was refused: ${spec.error.message}`);
  return { ...spec.value, id, payload };
}
