// Secrets are not in wrangler.toml, so `wrangler types` cannot see them.
declare namespace Cloudflare {
  interface Env {
    /** Comma-separated bearer tokens accepted by the API (rotation: old,new). Unset: the API fails closed. */
    API_TOKEN?: string;
  }
}
