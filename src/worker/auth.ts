/**
 * Bearer auth of every `/v1` route. `API_TOKEN` is a comma-separated list so a token can be rotated in
 * before the old one is removed. Unset or empty, the API fails closed (503 `auth_not_configured`).
 * Tokens are never logged, and every configured token is compared, so timing says nothing about
 * which one (or whether any) matched.
 */
import type { MiddlewareHandler } from "hono";
import { QueueError } from "../shared/errors.js";
import type { AppEnv } from "./openapi.js";

const encoder = new TextEncoder();

/** The tokens `API_TOKEN` lists: trimmed, empties ignored. */
export function configuredTokens(apiToken: string | undefined): string[] {
  return (apiToken ?? "")
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), or null. */
export function bearerToken(header: string | undefined): string | null {
  const match = /^Bearer[ \t]+(\S.*)$/i.exec(header ?? "");
  const token = match?.[1]?.trim();
  return token ? token : null;
}

/**
 * Constant-time membership: both sides are hashed with SHA-256 first, so `timingSafeEqual` compares
 * equal-length buffers and a token's length leaks nothing either.
 */
export async function tokenMatches(candidate: string, tokens: readonly string[]): Promise<boolean> {
  const digest = (text: string) => crypto.subtle.digest("SHA-256", encoder.encode(text));
  const given = await digest(candidate);
  let matched = false;
  for (const token of tokens) {
    const equal = crypto.subtle.timingSafeEqual(given, await digest(token));
    matched = matched || equal;
  }
  return matched;
}

export const requireBearer: MiddlewareHandler<AppEnv> = async (c, next) => {
  const tokens = configuredTokens(c.env.API_TOKEN);
  if (tokens.length === 0) {
    throw new QueueError("auth_not_configured", "the API has no token configured (API_TOKEN); it refuses every request");
  }
  const candidate = bearerToken(c.req.header("authorization"));
  if (candidate === null || !(await tokenMatches(candidate, tokens))) {
    throw new QueueError("unauthorized", "missing or wrong bearer token");
  }
  await next();
};
