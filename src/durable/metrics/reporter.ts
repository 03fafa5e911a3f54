/**
 * The lane's metrics reports to the registry (docs/operations.md "Metrics"), so that a scrape of
 * every lane reads one object, not each lane. After a flush that followed a change, the lane sends
 * its report if it differs from the last one sent and a second has passed since that one; otherwise
 * the report waits, and the instant it may go is a term of the lane's one wake (wake/terms.ts): no
 * timer of its own. At most one report is in flight; one that fails (or whose read throws) is tried
 * again later (backing off to a minute, from the failure) and never holds up the lane's work: its
 * flush and re-arm go on. An idle lane sends nothing. Each shard of a sharded lane reports its own,
 * with the shard count it holds; the registry merges them (docs/concepts.md "Sharded lanes").
 */
import type { Clock } from "../../shared/clock.js";
import { describeError } from "../../shared/describe-error.js";
import { log } from "../../shared/log.js";
import type { RegistryPeer } from "../env.js";
import type { LaneReport } from "./exposition.js";

/** The least time between two reports of a lane. */
export const REPORT_EVERY_MS = 1_000;
/** The longest a failing report waits before the next try. */
const MAX_RETRY_MS = 60_000;

export interface ReporterHost {
  /** The reporting object's name: the lane's, or a shard's (`L#i`: every shard of a sharded lane reports). */
  object: string;
  clock: Clock;
  /**
   * Whether the lane reports: it records (history/recording.ts), its class lets it, and the Worker
   * binds a registry. Off, it never reports.
   */
  reports: boolean;
  /** The registry, when the Worker binds one. */
  registry(): RegistryPeer | undefined;
  /** The lane's report as its rows say now (lane-report.ts). */
  read(): LaneReport;
  waitUntil(promise: Promise<unknown>): void;
  /** A report waits again after one in flight: the wake takes up its term. */
  changed(): void;
  /** Whether the registry may hold a report of this lane (the lane row remembers it: store/settings.ts). */
  hasReported(): boolean;
  setReported(on: boolean): void;
}

export class MetricsReporter {
  /** A change since the last report was built. */
  private dirty = false;
  /** The last report the registry took, as JSON (null: none yet in this instance). */
  private lastSent: string | null = null;
  /** When the last report was sent, or when the last try failed (a backoff counts from the failure). */
  private lastAt = Number.NEGATIVE_INFINITY;
  private failures = 0;
  private sending: Promise<void> | null = null;
  /** Whether the lane row says the registry may hold a report (known after this instance's first send). */
  private remembered = false;
  /** How many reports this instance has sent (for the benchmark and tests). */
  sent = 0;

  constructor(private readonly host: ReporterHost) {}

  /**
   * At start-up, with reports off: a report the lane left in the registry (reports on before, the
   * row says) is withdrawn, so that a scrape does not serve it as current; once, then the row forgets it.
   */
  withdraw(): void {
    if (this.host.reports || !this.host.hasReported()) return;
    try {
      const registry = this.host.registry();
      if (!registry) return;
      this.sending = registry.forget(this.host.object).then(
        () => this.host.setReported(false),
        (error: unknown) => log({ event: "lane.metrics_withdraw_failed", lane: this.host.object, message: describeError(error) }),
      ).finally(() => {
        this.sending = null;
      });
      this.host.waitUntil(this.sending);
    } catch (error) {
      log({ event: "lane.metrics_withdraw_failed", lane: this.host.object, message: describeError(error) });
    }
  }

  /** After a flush: the lane may have changed; the report goes now if it may, else it waits for its term. */
  noteChange(): void {
    if (!this.host.reports) return;
    this.dirty = true;
    this.trySend();
  }

  /**
   * A change that no flush follows (an enqueue that moves no term of the wake): while a report waits
   * already, only a flag; otherwise the wake is asked for a flush, which sends the report or makes
   * its instant a term (one in flight asks for it when it ends).
   */
  noteQuietChange(): void {
    if (this.dirty || !this.host.reports) return;
    this.dirty = true;
    if (this.sending === null) this.host.changed();
  }

  /** The wake's term: when a waiting report may go (null: none waits, or one is in flight). */
  dueAt(): number | null {
    return this.dirty && this.sending === null ? this.lastAt + this.spacing() : null;
  }

  /** Resolves once no report is in flight (for tests). */
  async settled(): Promise<void> {
    while (this.sending) await this.sending;
  }

  private spacing(): number {
    return this.failures === 0 ? REPORT_EVERY_MS : Math.min(MAX_RETRY_MS, REPORT_EVERY_MS * 2 ** this.failures);
  }

  private trySend(): void {
    if (!this.dirty || this.sending !== null || this.host.clock.now() < this.lastAt + this.spacing()) return;
    this.dirty = false;
    let registry: RegistryPeer | undefined;
    let report: LaneReport;
    try {
      registry = this.host.registry();
      if (!registry) return;
      report = this.host.read();
    } catch (error) {
      // Within a flush, before its re-arm: never the flush's failure. A failed try, it goes again after a backoff.
      this.failed(error);
      return;
    }
    // A lane that never had a job has nothing to report (a read of an unknown lane must not list it).
    if (report.stats.enqueued === 0) return;
    const json = JSON.stringify(report);
    if (json === this.lastSent) return;
    this.lastAt = this.host.clock.now();
    this.sent++;
    let call: Promise<void>;
    try {
      // Remembered before the first report: a lane whose reports are turned off withdraws it then.
      if (!this.remembered && !this.host.hasReported()) this.host.setReported(true);
      this.remembered = true;
      call = registry.report(this.host.object, report);
    } catch (error) {
      this.failed(error); // a stub that throws at once, as one that rejects
      return;
    }
    const sending = call.then(
      () => {
        this.lastSent = json;
        this.failures = 0;
      },
      (error: unknown) => this.failed(error),
    );
    this.sending = sending.finally(() => {
      this.sending = null;
      if (this.dirty) this.host.changed();
    });
    this.host.waitUntil(this.sending);
  }

  /** A try that failed: the report waits again, a backoff from now. */
  private failed(error: unknown): void {
    this.lastAt = this.host.clock.now();
    this.failures++;
    this.dirty = true;
    log({ event: "lane.metrics_report_failed", lane: this.host.object, failures: this.failures, message: describeError(error) });
  }
}
