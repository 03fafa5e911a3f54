/**
 * The bindings as the front worker uses them: the lane and the registry with every method of their
 * classes (the lane's own env names only what a lane calls on them, durable/env.ts).
 */
import type { SwitchyardEnv } from "../durable/env.js";
import type { Lane } from "../durable/lane.js";
import type { LaneRegistry } from "../durable/registry.js";

export interface WorkerEnv extends Omit<SwitchyardEnv, "LANE" | "REGISTRY"> {
  LANE: DurableObjectNamespace<Lane>;
  REGISTRY: DurableObjectNamespace<LaneRegistry>;
  /**
   * `"off"`: each single enqueue makes its own call to its lane. Otherwise (the default) concurrent
   * single enqueues to one lane in this isolate go as one call (group commit, client/group-commit.ts).
   */
  GROUP_COMMIT?: string;
  /** Scoped tokens: a JSON array of `{"token", "role", "lanes"?}` (docs/api.md, Access; src/worker/access.ts). A secret. */
  API_KEYS?: string;
  /** The key that signs waitpoint callback URLs and job links (src/worker/signing.ts). A secret; unset or empty: no signed URLs (fail closed). */
  SIGNING_SECRET?: string;
}
