/** The lane's own row: its name, concurrency, pause and whether the registry knows it. */
import { DEFAULT_CONCURRENCY } from "../shared/defaults.js";

export interface LaneSettings {
  name: string | null;
  concurrency: number;
  paused: boolean;
  registered: boolean;
}

type LaneRow = { name: string | null; concurrency: number; paused: number; registered: number };

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
    const row = this.sql.exec<LaneRow>(`SELECT name, concurrency, paused, registered FROM lane WHERE id = 1`).toArray()[0];
    this.cached = row
      ? { name: row.name, concurrency: row.concurrency, paused: row.paused === 1, registered: row.registered === 1 }
      : { name: null, concurrency: DEFAULT_CONCURRENCY, paused: false, registered: false };
    return this.cached;
  }

  /** Remembers the lane's name and that the registry knows it. */
  markRegistered(): void {
    this.sql.exec(`UPDATE lane SET name = ?1, registered = 1 WHERE id = 1`, this.lane);
    this.cached = null;
  }

  configure(patch: { concurrency?: number | undefined; paused?: boolean | undefined }): void {
    this.sql.exec(
      `UPDATE lane SET concurrency = COALESCE(?1, concurrency), paused = COALESCE(?2, paused) WHERE id = 1`,
      patch.concurrency ?? null,
      patch.paused === undefined ? null : patch.paused ? 1 : 0,
    );
    this.cached = null;
  }
}
