/**
 * What lanes say to each other about dependencies (docs/api.md "Dependencies"), over Durable Object
 * RPC: a dependent's enqueue registers with each dependency's lane (which answers whether the job
 * exists and, when it has settled already, how), and a dependency's lane tells each dependent's lane
 * of its settlement through its outbox until acknowledged. Both ends validate with these schemas: a
 * lane trusts no caller.
 */
import { z } from "zod";
import { MAX_BATCH_JOBS, MAX_DEPENDENCIES, OUTBOX_BATCH } from "../../shared/defaults.js";
import { OUTCOMES, type Outcome } from "../../shared/job.js";
import { JobId, Name } from "../../shared/schemas.js";
import { MAX_SHARDS, parseShardObjectName } from "../../shared/shards.js";

/** Any job id on both ends: a fire's and a dead-letter copy's are depended on and wait as other jobs do. */
const Ref = z.strictObject({ lane: Name, id: JobId });

/** The object a dependent lives in: its lane, or shard i of a sharded lane (`lane#i`), where its notices go. */
const ObjectName = z.string().refine((name) => {
  const { lane, index } = parseShardObjectName(name);
  return Name.safeParse(lane).success && index < MAX_SHARDS && (index > 0 || name === lane);
}, "must be a lane name, or a lane's shard (lane#1..lane#63)");

/**
 * A dependent's enqueue to the lane of its dependency `id`: the dependent `{lane, id}` waits for it,
 * `lane` naming the dependent's object (its shard, on a sharded lane: docs/concepts.md "Sharded lanes").
 */
export const Registrations = z
  .array(z.strictObject({ id: JobId, dependent: z.strictObject({ lane: ObjectName, id: JobId }) }))
  .min(1)
  .max(MAX_BATCH_JOBS * MAX_DEPENDENCIES);
export type Registration = z.infer<typeof Registrations>[number];

/**
 * The token of the enqueue that registers (a nonce of its own): its withdrawal takes back only what
 * this token holds. Absent from a lane of an older version: then held for good.
 */
export const RegistrationToken = z.string().min(1).max(128).optional();

/** What a dependency settled as, and of which generation; `result` as JSON text. */
export interface Settlement {
  outcome: Outcome;
  result: string | null;
  error: string | null;
  generation: number;
}

/**
 * The answer to one registration: no such job (`missing`); registered, not settled yet (`waiting`:
 * a notice will come); or registered and settled already (the notice is this answer).
 */
export type RegistrationAnswer = { status: "missing" } | { status: "waiting" } | ({ status: "settled" } & Settlement);

/** One notice of an outbox: `key` is the sender's (its outbox row), `dependent` a job id of the receiving lane. */
export const Notices = z
  .array(
    z.strictObject({
      key: z.number().int(),
      dependency: Ref,
      dependent: JobId,
      outcome: z.enum(OUTCOMES),
      result: z.string().nullable(),
      error: z.string().nullable(),
      generation: z.number().int().min(0),
    }),
  )
  .min(1)
  .max(OUTBOX_BATCH);
export type Notice = z.infer<typeof Notices>[number];

/**
 * What the receiver did with one notice: applied it; had applied it before (`repeat`); found no such
 * dependent or dependency (`gone`: never written, or deleted since); all three acknowledge it. `pending`:
 * the dependent's enqueue is between its registration and its write: tell again later.
 */
export type NoticeAnswer = "applied" | "repeat" | "gone" | "pending";
