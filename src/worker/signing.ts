/**
 * Signed URLs (docs/api.md, Conventions and Results): a waitpoint's callback URL and a job's link
 * carry an HMAC-SHA256 under the `SIGNING_SECRET` secret instead of a bearer token, since a payment
 * provider's webhook or a browser's EventSource cannot send one. The signed message is a JSON array
 * of a domain tag and the path's parts, so a callback's signature is never a link's (nor the other
 * way round) and no two (lane, id) pairs run together into one message. A signature is base64url
 * without padding (43 characters) and is compared in constant time as text, so only the one spelling
 * this API makes verifies. No secret (unset, empty or blank): nothing is signed and nothing verifies.
 */

/** Characters of a signature: 32 bytes of HMAC-SHA256 in base64url without padding. */
export const SIGNATURE_LENGTH = 43;
const SIGNATURE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** A version in each tag: a new message format gets a new tag, and old URLs stop verifying. */
const CALLBACK_TAG = "switchyard callback v1";
const LINK_TAG = "switchyard link v1";

/** An instant as a link's path spells it: a non-negative integer, no sign, no leading zero. */
const EXPIRES_AT_PATTERN = /^(0|[1-9][0-9]{0,15})$/;

const encoder = new TextEncoder();
/** Imported keys by secret: one import per isolate, not per request. */
const keys = new Map<string, Promise<CryptoKey>>();

/** The secret, or null when it is unset or blank: signing is off, fail closed. */
function configured(secret: string | undefined): string | null {
  return secret === undefined || secret.trim() === "" ? null : secret;
}

/** Whether `SIGNING_SECRET` is set: signed URLs are made and verified only then. */
export function signingConfigured(secret: string | undefined): boolean {
  return configured(secret) !== null;
}

function keyOf(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (key) return key;
  key = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  // One secret at a time, two across a rotation: forget them all should a few pile up.
  if (keys.size >= 4) keys.clear();
  keys.set(secret, key);
  return key;
}

async function sign(secret: string, parts: readonly (string | number)[]): Promise<string> {
  const mac = await crypto.subtle.sign("HMAC", await keyOf(secret), encoder.encode(JSON.stringify(parts)));
  return toBase64Url(new Uint8Array(mac));
}

/** Whether `given` is the signature of `parts`, compared in constant time (its length is public). */
async function verify(secret: string | undefined, parts: readonly (string | number)[], given: string): Promise<boolean> {
  const key = configured(secret);
  if (key === null || !SIGNATURE_PATTERN.test(given)) return false;
  const expected = await sign(key, parts);
  return crypto.subtle.timingSafeEqual(encoder.encode(expected), encoder.encode(given));
}

// ---- callbacks ----

/** The signature of waitpoint `id`'s callback URL in `lane` (the secret must be configured). */
export function signCallback(secret: string, lane: string, id: string): Promise<string> {
  return sign(secret, [CALLBACK_TAG, lane, id]);
}

/** Whether `signature` signs waitpoint `id` of `lane`; false without a secret. */
export function verifyCallback(secret: string | undefined, lane: string, id: string, signature: string): Promise<boolean> {
  return verify(secret, [CALLBACK_TAG, lane, id], signature);
}

/** `/v1/callbacks/{lane}/waitpoints/{id}/{signature}`, or null while no `SIGNING_SECRET` is set. */
export async function callbackUrlFor(secret: string | undefined, lane: string, id: string): Promise<string | null> {
  const key = configured(secret);
  if (key === null) return null;
  return `/v1/callbacks/${lane}/waitpoints/${id}/${await signCallback(key, lane, id)}`;
}

// ---- links ----

/** The signature of job `id`'s link in `lane` that expires at `expiresAt` (epoch ms). */
export function signLink(secret: string, lane: string, id: string, expiresAt: number): Promise<string> {
  return sign(secret, [LINK_TAG, lane, id, expiresAt]);
}

/**
 * Whether a link's path parts verify at `nowMs`: `expiresAt` as the path spells it (only the
 * spelling this API makes), the signature first, then the expiry. False without a secret.
 */
export async function verifyLink(secret: string | undefined, lane: string, id: string, expiresAt: string, signature: string, nowMs: number): Promise<boolean> {
  if (!EXPIRES_AT_PATTERN.test(expiresAt)) return false;
  const at = Number(expiresAt);
  if (!Number.isSafeInteger(at)) return false;
  if (!(await verify(secret, [LINK_TAG, lane, id, at], signature))) return false;
  return nowMs < at;
}

/** A link to job `id` of `lane` for `ttlMs` from `nowMs`: its path and expiry, or null while no `SIGNING_SECRET` is set. */
export async function linkFor(secret: string | undefined, lane: string, id: string, ttlMs: number, nowMs: number): Promise<{ url: string; expiresAt: number } | null> {
  const key = configured(secret);
  if (key === null) return null;
  const expiresAt = nowMs + ttlMs;
  return { url: `/v1/links/${lane}/${id}/${expiresAt}/${await signLink(key, lane, id, expiresAt)}`, expiresAt };
}

function toBase64Url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
