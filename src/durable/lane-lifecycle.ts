/**
 * The lane's life around its parts (lane-parts.ts builds them): its start before any request, its
 * alarm, the cron's check of its wake, failing it, its info and metrics, its registration with the
 * registry, and the report of in-process attempts that lost their lease. Also the refusal of every
 * call by a lane whose schema is newer than this code.
 */
import { fail, ok, type Result } from "../shared/errors.js";
import { FAIL_LANE_BATCH, RECOVERY_BATCH } from "../shared/defaults.js";
import type { FailLaneAnswer } from "../shared/answers.js";
import type { Clock } from "../shared/clock.js";
import { describeError } from "../shared/describe-error.js";
import type { ClaimedJob, LaneInfo } from "../shared/job.js";
import { log, type LostCause, type LostEvent } from "../shared/log.js";
import type { RegistryPeer } from "./env.js";
import type { LaneOptions, LaneParts } from "./lane-parts.js";
import { laneExposition, type LaneReport } from "./metrics/exposition.js";
import { startHistograms } from "./metrics/histograms.js";
import { withoutToken } from "./store/job-row.js";
import { SCHEMA_VERSION } from "./store/migrations.js";
import type { WakeCheck } from "./wake/alarm-watch.js";

/** How often, at most, the alarm drops the rows of kinds and queues left with nothing. */
const HOUSEKEEPING_EVERY_MS = 60_000;

export class LaneLifecycle {
  private lastHousekeeping: number | null = null;

  constructor(
    private readonly parts: LaneParts,
    private readonly options: LaneOptions,
    private readonly clock: Clock,
  ) {}

  /** A lane of a newer schema refuses every call, changing nothing. */
  refusal<T>(): Result<T> | null {
    const { schema, lane } = this.parts;
    if (schema.ok) return null;
    return fail("lane_schema_too_new", `lane ${lane} was written by a newer Switchyard (schema ${schema.stored}; this one knows ${SCHEMA_VERSION})`);
  }

  /** Run once before any request reaches the object (`blockConcurrencyWhile`). */
  async start(): Promise<void> {
    if (!this.parts.schema.ok) {
      log({ event: "lane.schema_too_new", lane: this.parts.lane, stored: this.parts.schema.stored, supported: SCHEMA_VERSION });
      return;
    }
    this.parts.history.start(this.parts.recording);
    startHistograms(this.parts.ctx.storage, this.parts.recording);
    this.parts.metrics.withdraw();
    // An overdue stored alarm is taken for lost by the re-arm below, and written again.
    this.parts.wake.know(await this.parts.ctx.storage.getAlarm());
    // Jobs whose executors died with a previous instance are given back or recovered now, not at lease expiry.
    const { givenBack, expired } = this.parts.recovery.afterRestart();
    if (givenBack + expired > 0) log({ event: "lane.leases_after_restart", lane: this.parts.lane, version: this.parts.recovery.version, givenBack, expired });
    if (expired > 0) this.recoverExpired();
    this.parts.outcomes.settleUndeliverable();
    // Objects owed the bucket by an instance that died (an upload cut short, a deletion not done) go now.
    this.parts.payloads.sweepOwed();
    // Re-arm on start: a lost alarm write heals here, and due jobs start again after a restart.
    this.parts.wake.afterChange();
    this.parts.wake.flush();
  }

  /**
   * The alarm's work: fire due schedules, recover, reconcile, wind up, deliver, keep retention, flush.
   * Each step stands alone (wake/alarm-steps.ts): one that throws is logged and tried again after a
   * backoff, and the others still run.
   */
  async alarm(): Promise<void> {
    this.parts.wake.consumed();
    const steps = this.parts.alarmSteps;
    const fired = steps.run("fires", () => this.parts.schedules.fireDue()) ?? 0;
    steps.run("recovery", () => this.recoverExpired());
    steps.run("reconcile", () => this.parts.dispatcher.reconcile());
    steps.run("windUp", () => this.windUpCancels());
    steps.run("expiry", () => this.parts.expiry.expireDue());
    steps.run("undeliverable", () => this.parts.outcomes.settleUndeliverable());
    steps.run("retention", () => this.parts.retention.pass(this.parts.store.settings.read().retention));
    steps.run("outbox", () => this.parts.outbox.deliver());
    steps.run("deadLetters", () => this.parts.deadLetters.deliver());
    steps.run("waitpoints", () => {
      this.parts.waitpoints.alarm(this.parts.store.settings.read().retention.completedMs);
      void this.parts.waitpointOutbox.deliver(); // after the timeouts, whose notices go in the same alarm
    });
    steps.run("bulk", () => this.parts.bulk.turn()); // one chunk an alarm: the term brings it back at once
    steps.run("housekeeping", () => this.housekeeping());
    if (this.parts.payloads.sweep.pending) this.parts.payloads.sweep.soon(); // a sweep that failed: tried again
    this.parts.wake.afterChange();
    steps.run("flush", () => this.parts.wake.flush()); // within the handler: an alarm set after it returns could be taken for consumed
    this.comeBackForFailedSteps();
    // A sharded lane's fires sent to other shards, answered (a crash meanwhile: the alarm runs again).
    await steps.runAsync("sent", () => this.parts.schedules.sent());
    // Moves exist only on a lane of several shards (resharding waits for them): one shard reads nothing.
    if (this.parts.shard.count() > 1) await steps.runAsync("keyMoves", () => this.parts.keyMoves.deliverDue());
    this.comeBackForFailedSteps();
    if (fired > 0) await this.register();
  }

  /** Whatever step threw, the alarm comes back for it, even when the flush's own re-arm was what threw. */
  private comeBackForFailedSteps(): void {
    const retryAt = this.parts.alarmSteps.retryAt();
    if (retryAt !== null) this.parts.wake.armNoLaterThan(retryAt);
  }

  /** The cron's check of lost alarms (`Lane.checkWake`): the stored alarm becomes the computed wake; an idle lane lets the registry stop watching it. */
  async checkWake(): Promise<WakeCheck> {
    const alarmWas = await this.parts.ctx.storage.getAlarm();
    // A stored alarm overdue by more than the grace is lost (stored, never scheduled): the re-arm writes it again.
    this.parts.wake.know(alarmWas);
    const rearmed = this.parts.wake.rearm(false);
    const wakeAt = this.parts.wake.lastComputed ?? null;
    if (rearmed && wakeAt !== null) log({ event: "lane.alarm_rearmed", lane: this.parts.lane, alarmWas, wakeAt });
    if (wakeAt === null) this.parts.alarmWatch.idle();
    return { wakeAt, alarmWas, rearmed, watch: wakeAt !== null };
  }

  /** Fails up to a batch (or `limit`) of queued and running jobs (running first) and aborts their in-process attempts. */
  failLane(reason: string, limit = FAIL_LANE_BATCH): FailLaneAnswer {
    const { failed, running } = this.parts.failure.fail(reason, limit);
    // Its lease is gone with the job settled: the attempt is lost (a cancelled one, cancelled).
    for (const job of running) this.parts.dispatcher.abort(job.id, job.outcome === "cancelled" ? "cancelled" : "lost", "settled");
    const { blocked, queued, running: stillRunning } = this.parts.store.counts();
    return { failed, more: blocked + queued + stillRunning > 0 };
  }

  laneInfo(): Result<LaneInfo> {
    const { concurrency, paused, retention, rateLimit, fairness, deadLetter } = this.parts.store.settings.read();
    const { laneCounts } = this.parts.store;
    const waitpoints = this.parts.waitpoints.counts();
    return ok({
      lane: this.parts.lane, counts: laneCounts.counts(), paused, concurrency, nextWakeAt: this.parts.wakeComputer.compute(),
      retention, stats: { ...laneCounts.stats(), ...waitpoints.stats }, oldestDueAt: laneCounts.oldestDueAt(this.clock.now()), kinds: laneCounts.kinds(),
      rateLimit, fairness, deadLetter: deadLetter === null ? null : { lane: deadLetter },
      shards: this.parts.shard.count(),
      waitpoints: { pending: waitpoints.pending },
      queueDefaults: this.parts.store.settings.queueDefaults(),
    });
  }

  /** The lane's metrics in the text exposition, read live (docs/api.md "Metrics"). */
  metricsText(): string {
    return laneExposition(this.parts.lane, [this.parts.metricsReport()], this.clock.now());
  }

  /** This object's report and its clock's now: a sharded lane's route merges its shards' (shared/metrics-report.ts). */
  metricsReading(): { report: LaneReport; nowMs: number } {
    return { report: this.parts.metricsReport(), nowMs: this.clock.now() };
  }

  /**
   * The registry learns a lane once, on its first job: not a call per enqueue. Null when there is
   * nothing to wait for (known already, or no registry), so that an enqueue can answer in its turn.
   */
  register(): Promise<void> | null {
    // Every shard that gets a job tells the registry its lane's name, once (the registry keeps it once):
    // a sharded lane's jobs may all be on shards other than its first (copies routed by their ids).
    if (this.parts.store.settings.read().registered) return null;
    const registry = this.parts.registry();
    return registry ? this.registerWith(registry) : null;
  }

  private async registerWith(registry: RegistryPeer): Promise<void> {
    try {
      await registry.register(this.parts.lane, this.clock.now());
      this.parts.store.settings.markRegistered();
    } catch (error) {
      log({ event: "lane.register_failed", lane: this.parts.lane, message: describeError(error) });
    }
  }

  /** At most once a minute, on an alarm: the rows of kinds and queues with nothing left to count or keep go. */
  private housekeeping(): void {
    const now = this.clock.now();
    if (this.lastHousekeeping !== null && now - this.lastHousekeeping < HOUSEKEEPING_EVERY_MS) return;
    this.lastHousekeeping = now;
    this.parts.store.laneCounts.pruneKinds();
    this.parts.queues.prune();
  }

  private recoverExpired(): void {
    // A full batch: there may be more.
    while (this.parts.recovery.recoverExpired() === RECOVERY_BATCH);
  }

  /** Cancellations of in-process jobs whose attempt no executor here holds (it died with a bug): settled now. */
  private windUpCancels(): void {
    for (const { id, token } of this.parts.cancels.inProcess()) if (!this.parts.dispatcher.holds(id)) this.parts.cancels.settleAttempt(id, token);
  }

  /** An in-process attempt lost its lease: its own outcome, logged and told to `onLost`. */
  lost(job: ClaimedJob, cause: LostCause, message: string): void {
    this.parts.store.laneCounts.countLost();
    const event: LostEvent = { event: "job.lost", lane: this.parts.lane, jobId: job.id, kind: job.kind, attempt: job.attempts, generation: job.lease.generation, cause, message };
    if (this.options.log !== false) log(event);
    const seen = withoutToken(job);
    const onLost = this.options.onLost;
    this.parts.transitions.tell("onLost", onLost && ((e: LostEvent) => onLost(e, seen)), event);
  }
}
