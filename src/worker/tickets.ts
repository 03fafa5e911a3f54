/**
 * Tickets for the events socket (docs/api.md "Live events"). A browser cannot put a bearer token on a
 * WebSocket, and the API token must never travel in a URL (URLs end up in proxy logs and histories),
 * so a bearer-authenticated `POST /v1/tickets` mints a short-lived ticket that the socket's URL
 * carries instead.
 *
 * A ticket is `v1.<claims>.<mac>`: base64url JSON claims `{"lane", "exp", "lanes"?}` (lane null:
 * every lane the issuer reaches, its `lanes` patterns when it is scoped) and an HMAC-SHA256 over
 * `v1.<claims>` under a key derived (HKDF) from the issuer's token, never the token itself. Nothing
 * is stored: a ticket signed under any configured token verifies, so a rotation behaves as it does
 * for bearer auth, and removing a token revokes its tickets at once.
 */
import { reachesLane } from "./access.js";

/** How long a ticket opens sockets: docs/api.md allows at most 60 s. */
export const TICKET_TTL_MS = 30_000;
/** Claims further ahead than this are refused even when signed (a clock or a key gone wrong). */
const MAX_TTL_MS = 60_000;
/** No ticket this API mints is longer; longer input is not worth hashing. */
const MAX_TICKET_LENGTH = 512;
const VERSION = "v1";
const MAC_BYTES = 32;

export interface Ticket {
  ticket: string;
  /** Epoch ms after which the ticket opens nothing. */
  expiresAt: number;
}

/** Why a ticket was refused; `ok` when it opens the lane's socket. */
export type TicketCheck = "ok" | "malformed" | "bad_signature" | "expired" | "wrong_lane";

interface Claims {
  lane: string | null;
  exp: number;
  /** With lane null: the issuer's lane patterns (absent: every lane). */
  lanes?: string[];
}

const encoder = new TextEncoder();
/** Derived keys by token: HKDF per request would cost more than the check itself. */
const keys = new Map<string, Promise<CryptoKey>>();

/**
 * Mints a ticket for one lane (or, with null, every lane of `lanes`: null, every lane at all), signed
 * under the first listed token.
 */
export async function issueTicket(tokens: readonly string[], lane: string | null, nowMs: number, lanes: readonly string[] | null = null): Promise<Ticket> {
  const signer = tokens[0];
  if (signer === undefined) throw new Error("no API token to sign a ticket with");
  const expiresAt = nowMs + TICKET_TTL_MS;
  const claims: Claims = lane === null && lanes !== null ? { lane, exp: expiresAt, lanes: [...lanes] } : { lane, exp: expiresAt };
  const signed = `${VERSION}.${toBase64Url(encoder.encode(JSON.stringify(claims)))}`;
  const mac = await crypto.subtle.sign("HMAC", await ticketKey(signer), encoder.encode(signed));
  return { ticket: `${signed}.${toBase64Url(new Uint8Array(mac))}`, expiresAt };
}

/**
 * Whether `ticket` opens `lane`'s socket at `nowMs`. The MAC is checked first, against every listed
 * token in constant time and without stopping at a match, so nothing about the claims is read from
 * a ticket this API did not sign, and timing says nothing about which token signed it.
 */
export async function checkTicket(ticket: string, tokens: readonly string[], lane: string, nowMs: number): Promise<TicketCheck> {
  if (ticket.length > MAX_TICKET_LENGTH) return "malformed";
  const parts = ticket.split(".");
  if (parts.length !== 3 || parts[0] !== VERSION) return "malformed";
  const mac = fromBase64Url(parts[2]!);
  if (mac === null || mac.byteLength !== MAC_BYTES) return "malformed";
  const signed = encoder.encode(`${parts[0]}.${parts[1]}`);
  let valid = false;
  for (const token of tokens) {
    const expected = await crypto.subtle.sign("HMAC", await ticketKey(token), signed);
    valid = crypto.subtle.timingSafeEqual(expected, mac) || valid;
  }
  if (!valid) return "bad_signature";
  const claims = parseClaims(parts[1]!);
  if (claims === null) return "malformed";
  if (nowMs >= claims.exp || claims.exp - nowMs > MAX_TTL_MS) return "expired";
  const opens = claims.lane === null ? reachesLane(claims.lanes ?? null, lane) : claims.lane === lane;
  return opens ? "ok" : "wrong_lane";
}

/** The HMAC key of a token: HKDF-SHA256 with a purpose label, so the key serves tickets only. */
function ticketKey(token: string): Promise<CryptoKey> {
  let key = keys.get(token);
  if (key) return key;
  key = crypto.subtle
    .importKey("raw", encoder.encode(token), "HKDF", false, ["deriveKey"])
    .then((material) =>
      crypto.subtle.deriveKey(
        { name: "HKDF", hash: "SHA-256", salt: encoder.encode("switchyard"), info: encoder.encode("events ticket v1") },
        material,
        { name: "HMAC", hash: "SHA-256", length: 256 },
        false,
        ["sign"],
      ),
    );
  // A handful of tokens at most; a rotation leaves stale ones behind, so forget them all now and then.
  if (keys.size >= 16) keys.clear();
  keys.set(token, key);
  return key;
}

function parseClaims(encoded: string): Claims | null {
  const bytes = fromBase64Url(encoded);
  if (bytes === null) return null;
  try {
    const claims = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes)) as Partial<Claims> | null;
    if (typeof claims !== "object" || claims === null) return null;
    if (!Number.isSafeInteger(claims.exp)) return null;
    if (claims.lane !== null && typeof claims.lane !== "string") return null;
    if (claims.lanes !== undefined && !(Array.isArray(claims.lanes) && claims.lanes.every((p) => typeof p === "string"))) return null;
    return claims.lanes === undefined ? { lane: claims.lane, exp: claims.exp! } : { lane: claims.lane, exp: claims.exp!, lanes: claims.lanes };
  } catch {
    return null;
  }
}

function toBase64Url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64Url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  try {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
  } catch {
    return null;
  }
}
