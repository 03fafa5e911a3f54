declare namespace Cloudflare {
  interface Env {
    /** A lane class with no executors: every job waits for pull consumers. */
    PLAIN_LANE: DurableObjectNamespace<import("../src/durable/lane").Lane>;
  }
}
