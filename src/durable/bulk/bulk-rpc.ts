/** What a lane answers about bulk actions (lane.ts's methods' bodies): their input checked, then bulk-actions.ts. */
import { BULK_ID_PATTERN, type Bulk } from "../../shared/bulk.js";
import { BulkRequest } from "../../shared/bulk-schemas.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import { parse } from "../input.js";
import type { BulkActions } from "./bulk-actions.js";

export class BulkRpc {
  constructor(private readonly bulk: BulkActions) {}

  /** Accepts a bulk action; `id` only from a sharded lane's router, the same on every shard. */
  startBulk(input: unknown, id?: unknown): Result<Bulk> {
    const request = parse(BulkRequest, input);
    if (!request.ok) return request;
    const name = id === undefined || id === null ? ok(null) : parseBulkId(id);
    if (!name.ok) return name;
    return this.bulk.start(request.value, name.value);
  }

  getBulk(id: unknown): Result<Bulk> {
    const name = parseBulkId(id);
    return name.ok ? this.bulk.get(name.value) : name;
  }

  /** The bulk action that runs here (null: none): a sharded lane's router asks every shard before it starts one. */
  runningBulk(): Result<Bulk | null> {
    return ok(this.bulk.running());
  }
}

function parseBulkId(id: unknown): Result<string> {
  return typeof id === "string" && BULK_ID_PATTERN.test(id) ? ok(id) : fail("invalid_request", "a bulk action's id is a name", [{ path: ["id"], message: "must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$" }]);
}
