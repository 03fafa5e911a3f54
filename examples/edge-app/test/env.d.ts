declare namespace Cloudflare {
  interface Env {
    /** The stub subscribers (test/subscribers/worker.js): `GET /log?event=<id>`. */
    SUBSCRIBERS_LOG: Fetcher;
  }
}
