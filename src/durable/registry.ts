/**
 * The registry: one Durable Object that remembers every lane that has ever had a job, for
 * `GET /v1/lanes`. A lane registers itself once, on its first job, so enqueue never calls it.
 */
import { DurableObject } from "cloudflare:workers";
import type { SwitchyardEnv } from "./env.js";

export const REGISTRY_NAME = "registry";

export class LaneRegistry extends DurableObject<SwitchyardEnv> {
  constructor(ctx: DurableObjectState, env: SwitchyardEnv) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS lanes (name TEXT PRIMARY KEY, registered_at INTEGER NOT NULL)`);
    });
  }

  /** Idempotent. */
  async register(lane: string, nowMs: number): Promise<void> {
    this.ctx.storage.sql.exec(`INSERT INTO lanes (name, registered_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`, lane, nowMs);
  }

  /** Lanes in name order, after `after` (exclusive). */
  async list(after: string | null, limit: number): Promise<{ lanes: string[]; more: boolean }> {
    const rows = this.ctx.storage.sql
      .exec<{ name: string }>(`SELECT name FROM lanes WHERE name > ? ORDER BY name LIMIT ?`, after ?? "", limit + 1)
      .toArray();
    return { lanes: rows.slice(0, limit).map((r) => r.name), more: rows.length > limit };
  }
}
