/**
 * The lane's own row: its name, concurrency, pause, retention, token bucket, fairness, and whether
 * the registry knows it. This object is the row's only writer, so it is read once and kept.
 */
import type { BucketState } from "../flow/bucket.js";
import { DEFAULT_COMPLETED_RETENTION_MS, DEFAULT_CONCURRENCY, DEFAULT_FAILED_RETENTION_MS } from "../../shared/defaults.js";
import type { Fairness, QueueDefaults, RateLimit, Retention } from "../../shared/job.js";
import { readQueueDefaults, writeQueueDefaults, type QueueDefaultsPatch } from "../flow/queue-defaults.js";
import { CONFIGURE_SQL, DEAD_LETTER_SQL, DRAW_SQL, LANE_NAME_SQL, METRICS_REPORTED_SQL, RATE_LIMIT_SQL, READ_SQL, REGISTERED_SQL, RETENTION_SQL, STORE_NAME_SQL, UNQUEUED_STARTED_SQL } from "./settings-statements.js";

export interface LaneSettings {
  name: string | null;
  concurrency: number;
  paused: boolean;
  registered: boolean;
  /** Whether the registry may hold a metrics report of this lane (metrics/reporter.ts). */
  metricsReported: boolean;
  /** How long settled jobs are kept: the operator's choices, the defaults for the rest. */
  retention: Retention;
  /** The lane's token bucket (null: none) and its state. */
  rateLimit: RateLimit | null;
  bucket: BucketState;
  fairness: Fairness;
  /** The lane failed and interrupted jobs are copied into (null: none; deadletters/outbox.ts). */
  deadLetter: string | null;
}

type LaneRow = {
  name: string | null;
  concurrency: number;
  paused: number;
  registered: number;
  metrics_reported: number;
  retention: string | null;
  rate_limit: number | null;
  rate_period_ms: number | null;
  bucket_units: number | null;
  bucket_at: number | null;
  fairness: Fairness;
  dead_letter: string | null;
};

/** What the operator chose (a key left out: the default), as the `retention` column stores it. */
type RetentionChoice = Partial<Retention>;

function withDefaults(choice: RetentionChoice): Retention {
  return {
    completedMs: choice.completedMs === undefined ? DEFAULT_COMPLETED_RETENTION_MS : choice.completedMs,
    failedMs: choice.failedMs === undefined ? DEFAULT_FAILED_RETENTION_MS : choice.failedMs,
  };
}

export interface LanePatchInput {
  concurrency?: number | undefined;
  paused?: boolean | undefined;
  retention?: { completedMs?: number | null | undefined; failedMs?: number | null | undefined } | undefined;
  rateLimit?: RateLimit | null | undefined;
  fairness?: Fairness | undefined;
  queueDefaults?: QueueDefaultsPatch | undefined;
  deadLetter?: { lane: string } | null | undefined;
}

export class LaneSettingsStore {
  private readonly sql: SqlStorage;
  private cached: LaneSettings | null = null;
  private defaults: QueueDefaults | null = null;

  constructor(private readonly storage: DurableObjectStorage) {
    this.sql = storage.sql;
  }

  /** The lane's queueDefaults (flow/queue-defaults.ts), read once: no claim reads them (the queues' rows hold their effective values). */
  queueDefaults(): QueueDefaults {
    return (this.defaults ??= readQueueDefaults(this.sql));
  }

  /** The object's name as stored by an earlier instance (null: never stored), for an object addressed without one. */
  static storedName(storage: DurableObjectStorage): string | null {
    return storage.sql.exec<{ name: string | null }>(LANE_NAME_SQL).toArray()[0]?.name ?? null;
  }

  /** Stores the object's name (the lane's; shard i's `L#i`) unless stored already: a write once per object. */
  static storeName(storage: DurableObjectStorage, name: string): void {
    storage.sql.exec(STORE_NAME_SQL, name);
  }

  /** The lane row, read once: this object is its only writer, and every write goes through here. */
  read(): LaneSettings {
    if (this.cached) return this.cached;
    const row = this.sql.exec<LaneRow>(READ_SQL).toArray()[0];
    this.cached = row
      ? {
          name: row.name,
          concurrency: row.concurrency,
          paused: row.paused === 1,
          registered: row.registered === 1,
          metricsReported: row.metrics_reported === 1,
          retention: withDefaults(row.retention === null ? {} : (JSON.parse(row.retention) as RetentionChoice)),
          rateLimit: row.rate_limit === null || row.rate_period_ms === null ? null : { limit: row.rate_limit, periodMs: row.rate_period_ms },
          bucket: { units: row.bucket_units, at: row.bucket_at },
          fairness: row.fairness,
          deadLetter: row.dead_letter,
        }
      : {
          name: null, concurrency: DEFAULT_CONCURRENCY, paused: false, registered: false, metricsReported: false, retention: withDefaults({}),
          rateLimit: null, bucket: { units: null, at: null }, fairness: "fifo", deadLetter: null,
        };
    return this.cached;
  }

  /**
   * Remembers that the registry knows the lane. The object's own name is not written here: every
   * shard registers, and shard i's is `<lane>#i`, stored when the runtime tells it (`storeName`).
   */
  markRegistered(): void {
    this.sql.exec(REGISTERED_SQL);
    this.cached = null;
  }

  /** Whether the registry may hold a metrics report of this lane: set before the first, cleared once withdrawn. */
  markMetricsReported(on: boolean): void {
    this.sql.exec(METRICS_REPORTED_SQL, on ? 1 : 0);
    if (this.cached) this.cached.metricsReported = on;
  }

  /** The lane's bucket after a draw (in the claim's transaction). */
  drawn(bucket: { units: number; at: number }): void {
    this.sql.exec(DRAW_SQL, bucket.units, bucket.at);
    if (this.cached) this.cached.bucket = bucket;
  }

  /** A job outside any queue started now (for round-robin). */
  unqueuedStarted(now: number): void {
    this.sql.exec(UNQUEUED_STARTED_SQL, now);
  }

  configure(patch: LanePatchInput): void {
    let retention: string | null = null;
    if (patch.retention !== undefined) {
      // Merged here, not with json_patch(): a merge patch reads null as "remove", and null means "keep them".
      const stored = this.sql.exec<{ retention: string | null }>(RETENTION_SQL).one().retention;
      const choice: RetentionChoice = stored === null ? {} : (JSON.parse(stored) as RetentionChoice);
      if (patch.retention.completedMs !== undefined) choice.completedMs = patch.retention.completedMs;
      if (patch.retention.failedMs !== undefined) choice.failedMs = patch.retention.failedMs;
      retention = JSON.stringify(choice);
    }
    this.sql.exec(
      CONFIGURE_SQL,
      patch.concurrency ?? null,
      patch.paused === undefined ? null : patch.paused ? 1 : 0,
      retention,
      patch.fairness ?? null,
    );
    const before = this.read().rateLimit;
    const same = patch.rateLimit !== undefined && before?.limit === patch.rateLimit?.limit && before?.periodMs === patch.rateLimit?.periodMs;
    if (patch.rateLimit !== undefined && !same) {
      // A new limit starts from a full bucket (what was drawn under another does not carry over); the
      // same limit set again keeps its bucket, so a repeated PATCH grants no burst.
      const rate = patch.rateLimit;
      this.sql.exec(RATE_LIMIT_SQL, rate?.limit ?? null, rate?.periodMs ?? null);
    }
    if (patch.queueDefaults !== undefined) this.defaults = writeQueueDefaults(this.storage, this.queueDefaults(), patch.queueDefaults);
    if (patch.deadLetter !== undefined) this.sql.exec(DEAD_LETTER_SQL, patch.deadLetter?.lane ?? null);
    this.cached = null;
  }
}
