/** The lane's own row: its name, concurrency, pause, retention and whether the registry knows it. */
import { DEFAULT_COMPLETED_RETENTION_MS, DEFAULT_CONCURRENCY, DEFAULT_FAILED_RETENTION_MS } from "../../shared/defaults.js";
import type { Retention } from "../../shared/job.js";

export interface LaneSettings {
  name: string | null;
  concurrency: number;
  paused: boolean;
  registered: boolean;
  /** How long settled jobs are kept: the operator's choices, the defaults for the rest. */
  retention: Retention;
}

type LaneRow = { name: string | null; concurrency: number; paused: number; registered: number; retention: string | null };

/** What the operator chose (a key left out: the default), as the `retention` column stores it. */
type RetentionChoice = Partial<Retention>;

function withDefaults(choice: RetentionChoice): Retention {
  return {
    completedMs: choice.completedMs === undefined ? DEFAULT_COMPLETED_RETENTION_MS : choice.completedMs,
    failedMs: choice.failedMs === undefined ? DEFAULT_FAILED_RETENTION_MS : choice.failedMs,
  };
}

export class LaneSettingsStore {
  private readonly sql: SqlStorage;
  private cached: LaneSettings | null = null;

  constructor(
    storage: DurableObjectStorage,
    private readonly lane: string,
  ) {
    this.sql = storage.sql;
  }

  /** The lane's name as stored by an earlier instance (null: never stored), for an object addressed without one. */
  static storedName(storage: DurableObjectStorage): string | null {
    return storage.sql.exec<{ name: string | null }>(`SELECT name FROM lane WHERE id = 1`).toArray()[0]?.name ?? null;
  }

  /** The lane row, read once: this object is its only writer, and every write goes through here. */
  read(): LaneSettings {
    if (this.cached) return this.cached;
    const row = this.sql.exec<LaneRow>(`SELECT name, concurrency, paused, registered, retention FROM lane WHERE id = 1`).toArray()[0];
    this.cached = row
      ? {
          name: row.name,
          concurrency: row.concurrency,
          paused: row.paused === 1,
          registered: row.registered === 1,
          retention: withDefaults(row.retention === null ? {} : (JSON.parse(row.retention) as RetentionChoice)),
        }
      : { name: null, concurrency: DEFAULT_CONCURRENCY, paused: false, registered: false, retention: withDefaults({}) };
    return this.cached;
  }

  /** Remembers the lane's name and that the registry knows it. */
  markRegistered(): void {
    this.sql.exec(`UPDATE lane SET name = ?1, registered = 1 WHERE id = 1`, this.lane);
    this.cached = null;
  }

  configure(patch: {
    concurrency?: number | undefined;
    paused?: boolean | undefined;
    retention?: { completedMs?: number | null | undefined; failedMs?: number | null | undefined } | undefined;
  }): void {
    let retention: string | null = null;
    if (patch.retention !== undefined) {
      // Merged here, not with json_patch(): a merge patch reads null as "remove", and null means "keep them".
      const stored = this.sql.exec<{ retention: string | null }>(`SELECT retention FROM lane WHERE id = 1`).one().retention;
      const choice: RetentionChoice = stored === null ? {} : (JSON.parse(stored) as RetentionChoice);
      if (patch.retention.completedMs !== undefined) choice.completedMs = patch.retention.completedMs;
      if (patch.retention.failedMs !== undefined) choice.failedMs = patch.retention.failedMs;
      retention = JSON.stringify(choice);
    }
    this.sql.exec(
      `UPDATE lane SET concurrency = COALESCE(?1, concurrency), paused = COALESCE(?2, paused), retention = COALESCE(?3, retention) WHERE id = 1`,
      patch.concurrency ?? null,
      patch.paused === undefined ? null : patch.paused ? 1 : 0,
      retention,
    );
    this.cached = null;
  }
}
