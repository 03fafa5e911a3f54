// Secrets are not in wrangler.toml, so `wrangler types` cannot see them.
interface EdgeAppSecrets {
  /** Bearer tokens of the queue's /v1 API, comma-separated to rotate. */
  API_TOKEN?: string;
  /** The bearer token of POST /webhooks/:topic. */
  INGEST_TOKEN?: string;
  /** Signs every delivery (HMAC-SHA256); subscribers check `webhook-signature` with it. */
  WEBHOOK_SECRET?: string;
}
interface Env extends EdgeAppSecrets {}
declare namespace Cloudflare {
  interface Env extends EdgeAppSecrets {}
}
