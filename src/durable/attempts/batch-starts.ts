/**
 * The starts of batch executors (batch-executor.ts), for the dispatcher (dispatcher.ts): a kind's due
 * jobs start together once `size` of them are due or the oldest due one has waited `waitMs` since its
 * `runAt`, and that instant is the kind's term of the wake. Readiness and the wake read one statement
 * (batch-statements.ts, through `Claims.batchDue`), so the wake never names a batch the pump would not
 * start. Each job of a batch is an attempt of the dispatcher's own (signal, deadline, renewals,
 * outcome); their outcomes are written together, in one transaction.
 */
import { DISPATCH_LEASE_MS } from "../../shared/defaults.js";
import type { ClaimedJob, DependencyOutcome, Json } from "../../shared/job.js";
import type { Attempt, Ended } from "./attempt.js";
import { batchEndings } from "../../shared/batch-answers.js";
import { batchJobOf, type BatchExecutorOptions } from "./batch-executor.js";
import type { DispatcherHost } from "./dispatcher-host.js";
import { wholeForExecutor } from "../payloads/held-dependencies.js";

/** What the batch starts need of their dispatcher: its host and the life of its attempts. */
export interface BatchStartsHost<E> {
  readonly host: DispatcherHost<E>;
  busyJobIds(): string[];
  heldSlots(): number;
  /** An attempt of a claimed job, kept by the dispatcher until its executor returns. */
  open(job: ClaimedJob, seq: number): Attempt;
  /** The executor returned for this attempt: its one end. */
  returned(attempt: Attempt, ended: Ended): void;
  /** Writes the completions of this turn. */
  settleCompletions(): void;
  dependenciesOf(attempt: Attempt): DependencyOutcome[];
}

export class BatchStarts<E> {
  constructor(
    private readonly batches: readonly (readonly [kind: string, options: BatchExecutorOptions<E>])[],
    private readonly dispatcher: BatchStartsHost<E>,
  ) {}

  /** Starts every ready batch; answers whether it left no ready batch waiting (for a slot or a token). */
  pump(): boolean {
    const { host } = this.dispatcher;
    let all = true;
    for (const [kind, options] of this.batches) {
      for (;;) {
        const excludeIds = this.dispatcher.busyJobIds();
        const { due, oldest } = host.claims.batchDue(kind, options.size, excludeIds);
        if (due === 0 || (due < options.size && oldest! + options.waitMs > host.clock.now())) break;
        const seqs = new Map<string, number>();
        const claimed = host.claims.take({
          kinds: [kind], excludeKinds: [], excludeIds, heldSlots: this.dispatcher.heldSlots(), max: options.size, leaseMs: DISPATCH_LEASE_MS, maxBytes: Infinity, holder: "lane",
        }, seqs);
        if (claimed.length > 0) this.start(claimed, seqs, options);
        if (claimed.length < due) {
          all = false; // the lane's room ran out first: a freed slot, or the next token, looks again
          break;
        }
        if (due < options.size) break; // it took every due one
      }
    }
    return all;
  }

  /** The earliest instant a batch is ready: now when one is, else its oldest due job's runAt + waitMs; null without due jobs. */
  wakeAt(): number | null {
    const { host } = this.dispatcher;
    const now = host.clock.now();
    const excludeIds = this.dispatcher.busyJobIds();
    let at: number | null = null;
    for (const [kind, options] of this.batches) {
      const { due, oldest } = host.claims.batchDue(kind, options.size, excludeIds);
      if (due === 0) continue;
      const ready = due >= options.size ? now : Math.max(now, oldest! + options.waitMs);
      if (at === null || ready < at) at = ready;
    }
    return at;
  }

  /**
   * Starts claimed jobs of a batch kind together: one call of `run`, each job its own attempt. A
   * payload or dependency's result held in R2 is read back first, so `run` gets each whole, as a
   * single-job executor does (payloads/held-dependencies.ts); a read that fails fails every job.
   */
  private start(claimed: ClaimedJob[], seqs: Map<string, number>, options: BatchExecutorOptions<E>): void {
    const { host } = this.dispatcher;
    const attempts = claimed.map((job) => this.dispatcher.open(job, seqs.get(job.id)!));
    const settle = (answer: Ended) => {
      const endings = batchEndings(answer, attempts.length);
      // Failures and completions of the batch in one transaction (each fenced on its own inside it).
      host.together(() => {
        attempts.forEach((attempt, i) => this.dispatcher.returned(attempt, endings[i]!));
        this.dispatcher.settleCompletions();
      });
    };
    let running: unknown;
    try {
      // Inside the try: a read that throws (a dependency's, a held payload's) fails the batch's jobs, never leaves them running.
      const held = attempts.map((attempt) => wholeForExecutor(host.payloads, attempt.job, () => this.dispatcher.dependenciesOf(attempt)));
      const run = (payloads: (Json | undefined)[]) => {
        const jobs = attempts.map((attempt, i) => batchJobOf(attempt, held[i]!.dependencies, payloads[i]));
        return options.run(jobs, { env: host.env, lane: host.lane });
      };
      running = held.every((h) => h.payload === null) ? run([]) : Promise.all(held.map((h) => h.payload ?? undefined)).then(run);
    } catch (error) {
      settle({ ok: false, error });
      return;
    }
    Promise.resolve(running).then(
      (value) => settle({ ok: true, value }),
      (error: unknown) => settle({ ok: false, error }),
    );
  }
}
