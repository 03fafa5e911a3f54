/**
 * Bearer tokens: `API_TOKEN` is a comma-separated list so a token can be rotated in before the old one
 * is removed. Tokens are never logged, and every configured token is compared, so timing says
 * nothing about which one (or whether any) matched. Who may call what: access.ts.
 */

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
 * equal-length buffers and a token's length leaks nothing either; every token is compared, matched or not.
 */
export async function tokenMatches(candidate: string, tokens: readonly string[]): Promise<boolean> {
  return (await matchingToken(candidate, tokens)) >= 0;
}

/** The index of the token `candidate` equals (-1: none), found in constant time as tokenMatches is. */
export async function matchingToken(candidate: string, tokens: readonly string[]): Promise<number> {
  const digest = (text: string) => crypto.subtle.digest("SHA-256", encoder.encode(text));
  const given = await digest(candidate);
  let matched = -1;
  for (const [i, token] of tokens.entries()) {
    const equal = crypto.subtle.timingSafeEqual(given, await digest(token));
    matched = equal && matched < 0 ? i : matched;
  }
  return matched;
}
