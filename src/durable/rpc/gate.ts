/**
 * The one way from a lane's RPC methods (lane.ts) into its parts. A lane of a newer schema refuses
 * every call, changing nothing. A method declared a `change` asks the wake for the flush that follows
 * every change (wake/wake.ts: start due jobs, answer held claims, re-arm the alarm) once its body has
 * answered, in the same turn when the body answers at once: no body calls for the flush by hand.
 * How a change flushes is its `FlushRule`; the exceptions to "always" are the few named below.
 */
import type { ErrorCode, Result } from "../../shared/errors.js";

/** Refusals of a call's input: bad input changes nothing (a 4xx), so it calls for no flush whatever the rule. */
const INPUT_REFUSALS: ReadonlySet<ErrorCode> = new Set(["invalid_request", "invalid_payload", "payload_too_large"]);

/**
 * Whether a change's answer calls for the flush: `true` (and look for jobs to start), `false` (flush,
 * but no job can have become startable), null (no flush).
 */
export type FlushRule<T> = (answer: Result<T>) => boolean | null;

/** The flush rules a change may declare, each with its reason. */
export const flush = {
  /** The default: after every answer, refused or not (a fenced write refused may still have settled its job). */
  always: () => true,
  /** A success moves no wake term; a refusal may have settled the job (its holder spoke for a cancel-requested job). */
  onRefusal: (answer) => (answer.ok ? null : true),
  /** A schedule's row is a wake term but makes no job due: no look for jobs to start; a refusal changed nothing. */
  scheduleRow: (answer) => (answer.ok ? false : null),
  /** The change writes only what no wake term reads (id and key reservations, registrations, watches). */
  never: () => null,
  /** The body flushes itself, in the turn its answer needs (before it waits, or with its kind's pump); the declaration says why. */
  inBody: () => null,
} satisfies Record<string, FlushRule<unknown>>;

/** A refusal of every call when the lane's schema is newer than this code's (lane-lifecycle.ts; null: none). */
export interface SchemaRefusal {
  refusal<T>(): Result<T> | null;
}

/** Queues the turn's one flush (wake/wake.ts). */
export interface ChangeFlush {
  afterChange(pump: boolean): void;
}

type Body<T> = () => Result<T> | Promise<Result<T>>;

export class RpcGate {
  constructor(
    private readonly schema: SchemaRefusal,
    private readonly wake: ChangeFlush,
  ) {}

  /** A method that changes nothing. */
  read<T>(body: Body<T>): Result<T> | Promise<Result<T>> {
    return this.schema.refusal<T>() ?? body();
  }

  /** A method that may change the lane: the flush follows its answer, as `rule` says. */
  change<T>(body: Body<T>, rule: FlushRule<T> = flush.always): Result<T> | Promise<Result<T>> {
    const refused = this.schema.refusal<T>();
    if (refused) return refused;
    const answer = body();
    return answer instanceof Promise ? answer.then((done) => this.flushed(done, rule)) : this.flushed(answer, rule);
  }

  /**
   * A change whose caller is answered only once `then` (a delivery its change owes other objects,
   * bounded by its maker) has resolved: flushed as `rule` says as soon as the body answers, so that
   * the wait on another object holds back no start, held claim or alarm here. A call the schema
   * refuses runs neither; `then` is given the body's answer (a refusal may still owe what its
   * change wrote: a fenced write's withdrawal).
   */
  changeThen<T>(body: Body<T>, then: (answer: Result<T>) => Promise<void> | null, rule: FlushRule<T> = flush.always): Result<T> | Promise<Result<T>> {
    const refused = this.schema.refusal<T>();
    if (refused) return refused;
    const answered = this.change(body, rule);
    const after = (answer: Result<T>) => {
      const told = then(answer);
      return told === null ? answer : told.then(() => answer);
    };
    return answered instanceof Promise ? answered.then(after) : after(answered);
  }

  private flushed<T>(answer: Result<T>, rule: FlushRule<T>): Result<T> {
    if (!answer.ok && INPUT_REFUSALS.has(answer.error.code)) return answer;
    const pump = rule(answer);
    if (pump !== null) this.wake.afterChange(pump);
    return answer;
  }
}
