/**
 * The runtime's state as it lies on disk once the runtime is stopped: each lane object's own SQLite
 * file (its rows, and the alarm its storage holds), and the alarm scheduler's own record of the
 * alarms it will run (`metadata.sqlite`). A chaos run reads them after a stall to say where work
 * stopped, which no API answers (an outbox row, an alarm stored but not scheduled). Read with the
 * `sqlite3` command (Node 20 has no SQLite of its own).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

/** One lane object's file, named as the lane stored it (`lane`, or `lane#i` for shard i). */
export interface StoredObject {
  file: string;
  /** The object's hex id (its file's name). */
  hexId: string;
  name: string;
  /** The alarm its storage holds (ms), null: none. */
  alarm: number | null;
  /** The alarm the scheduler holds for it (ms), null: none (a stored alarm it will never run). */
  scheduled: number | null;
}

/** Rows of a query, or a thrown error naming the file. */
export function rows<T = Record<string, unknown>>(file: string, sql: string): T[] {
  // A busy timeout: the stopped runtime's workerd may still be letting go of its files.
  const out = execFileSync("sqlite3", ["-json", "-cmd", ".timeout 15000", file, sql], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  return out.trim() === "" ? [] : (JSON.parse(out) as T[]);
}

/** Whether the `sqlite3` command is there to read the files with. */
export function canRead(): boolean {
  try {
    execFileSync("sqlite3", ["-version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Every lane object of the persisted state (the namespace `…-DemoLane` or any `…Lane` but the registry). */
export function laneObjects(persistDir: string): StoredObject[] {
  const root = join(persistDir, "v3", "do");
  if (!existsSync(root)) return [];
  const out: StoredObject[] = [];
  for (const namespace of readdirSync(root)) {
    if (!namespace.endsWith("Lane")) continue;
    const dir = join(root, namespace);
    const meta = join(dir, "metadata.sqlite");
    const scheduled = new Map<string, number>();
    if (existsSync(meta)) {
      for (const r of rows<{ actor_id: string; scheduled_time: number | null }>(meta, "SELECT actor_id, scheduled_time FROM _cf_ALARM")) {
        if (r.scheduled_time !== null) scheduled.set(r.actor_id, nanosToMs(r.scheduled_time));
      }
    }
    for (const entry of readdirSync(dir)) {
      if (!entry.endsWith(".sqlite") || entry === "metadata.sqlite") continue;
      const file = join(dir, entry);
      const hexId = entry.slice(0, -".sqlite".length);
      const tables = new Set(rows<{ name: string }>(file, "SELECT name FROM sqlite_master WHERE type = 'table'").map((r) => r.name));
      if (!tables.has("lane")) continue; // the registry, or an object that never migrated
      const name = rows<{ name: string | null }>(file, "SELECT name FROM lane WHERE id = 1")[0]?.name ?? hexId;
      const stored = tables.has("_cf_METADATA") ? rows<{ value: number | null }>(file, "SELECT value FROM _cf_METADATA WHERE key = 1")[0]?.value ?? null : null;
      out.push({ file, hexId, name, alarm: stored === null ? null : nanosToMs(stored), scheduled: scheduled.get(hexId) ?? null });
    }
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** workerd keeps alarm times in nanoseconds. */
function nanosToMs(value: number | string): number {
  return Math.round(Number(value) / 1e6);
}
