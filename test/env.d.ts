declare namespace Cloudflare {
  interface Env {
    /** A lane class with no executors: every job waits for pull consumers. */
    PLAIN_LANE: DurableObjectNamespace<import("./helpers/test-worker").PlainLane>;
    /** A lane whose outcomes go through `completing` to an `onOutcome` hook. */
    HOOK_LANE: DurableObjectNamespace<import("./helpers/test-worker").HookLane>;
    /** A lane whose outcome hook and observers throw what a test names (helpers/hook-throws.ts). */
    THROWING_LANE: DurableObjectNamespace<import("./helpers/test-worker").ThrowingLane>;
    /** A pull-only lane class whose recording (history and metrics) is off. */
    QUIET_LANE: DurableObjectNamespace<import("./helpers/test-worker").QuietLane>;
    /** LANE's executors, with metrics reports to the registry as in production (the suite's other lanes send none). */
    METRICS_LANE: DurableObjectNamespace<import("./helpers/test-worker").MetricsLane>;
  }
}
