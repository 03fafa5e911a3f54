/** Tickets for the events socket (src/worker/tickets.ts): signed, short-lived, scoped, stateless. */
import { describe, expect, it } from "vitest";
import { checkTicket, issueTicket, TICKET_TTL_MS } from "../../src/worker/tickets.js";

const TOKENS = ["token-a", "token-b"];
const NOW = 1_800_000_000_000;

/** The ticket with its claims part replaced by `claims`, its MAC kept. */
function withClaims(ticket: string, claims: unknown): string {
  const [version, , mac] = ticket.split(".");
  const encoded = btoa(JSON.stringify(claims)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  return `${version}.${encoded}.${mac}`;
}

describe("a ticket", () => {
  it("opens its lane until it expires, at most 60 s after minting", async () => {
    const { ticket, expiresAt } = await issueTicket(TOKENS, "lane-1", NOW);
    expect(expiresAt).toBe(NOW + TICKET_TTL_MS);
    expect(TICKET_TTL_MS).toBeLessThanOrEqual(60_000);
    expect(await checkTicket(ticket, TOKENS, "lane-1", NOW)).toBe("ok");
    expect(await checkTicket(ticket, TOKENS, "lane-1", expiresAt - 1)).toBe("ok");
    expect(await checkTicket(ticket, TOKENS, "lane-1", expiresAt)).toBe("expired");
    expect(await checkTicket(ticket, TOKENS, "lane-1", expiresAt + 3_600_000)).toBe("expired");
  });

  it("for one lane opens no other; without a lane it opens every lane", async () => {
    const one = (await issueTicket(TOKENS, "lane-1", NOW)).ticket;
    expect(await checkTicket(one, TOKENS, "lane-2", NOW)).toBe("wrong_lane");
    expect(await checkTicket(one, TOKENS, "lane-10", NOW)).toBe("wrong_lane");
    const all = (await issueTicket(TOKENS, null, NOW)).ticket;
    for (const lane of ["lane-1", "lane-2", "x"]) expect(await checkTicket(all, TOKENS, lane, NOW)).toBe("ok");
  });

  it("verifies under any listed token, so a rotation keeps it, and dies with its token", async () => {
    const { ticket } = await issueTicket(["token-a"], "lane-1", NOW);
    expect(await checkTicket(ticket, ["token-b", "token-a"], "lane-1", NOW)).toBe("ok");
    expect(await checkTicket(ticket, ["token-b"], "lane-1", NOW)).toBe("bad_signature");
    expect(await checkTicket(ticket, [], "lane-1", NOW)).toBe("bad_signature");
  });

  it("with its claims changed is refused: another lane, every lane, a later expiry", async () => {
    const { ticket, expiresAt } = await issueTicket(TOKENS, "lane-1", NOW);
    for (const claims of [{ lane: "lane-2", exp: expiresAt }, { lane: null, exp: expiresAt }, { lane: "lane-1", exp: expiresAt + 1 }]) {
      expect(await checkTicket(withClaims(ticket, claims), TOKENS, "lane-2", NOW)).toBe("bad_signature");
      expect(await checkTicket(withClaims(ticket, claims), TOKENS, "lane-1", NOW)).toBe("bad_signature");
    }
  });

  it("with its signature changed or swapped is refused", async () => {
    const { ticket } = await issueTicket(TOKENS, "lane-1", NOW);
    const other = (await issueTicket(TOKENS, "lane-2", NOW)).ticket;
    const [version, claims, mac] = ticket.split(".") as [string, string, string];
    const flipped = `${version}.${claims}.${mac[0] === "A" ? "B" : "A"}${mac.slice(1)}`;
    expect(await checkTicket(flipped, TOKENS, "lane-1", NOW)).toBe("bad_signature");
    expect(await checkTicket(`${version}.${claims}.${other.split(".")[2]}`, TOKENS, "lane-1", NOW)).toBe("bad_signature");
    // Signed by someone holding no listed token: an HMAC under another key.
    const forged = (await issueTicket(["not-a-listed-token"], "lane-1", NOW)).ticket;
    expect(await checkTicket(forged, TOKENS, "lane-1", NOW)).toBe("bad_signature");
  });

  it("minted for a far future is refused even though signed", async () => {
    const { ticket } = await issueTicket(TOKENS, "lane-1", NOW + 120_000);
    expect(await checkTicket(ticket, TOKENS, "lane-1", NOW)).toBe("expired");
  });

  it("that is not one at all is malformed, never a throw", async () => {
    const { ticket } = await issueTicket(TOKENS, "lane-1", NOW);
    const [, claims, mac] = ticket.split(".") as [string, string, string];
    for (const garbage of ["", "v1", "v1..", `v2.${claims}.${mac}`, `v1.${claims}.${mac}.x`, `v1.${claims}.${mac.slice(2)}`, `v1.${claims}.${mac}==`, "v1.%%%.%%%", "x".repeat(10_000)]) {
      expect(await checkTicket(garbage, TOKENS, "lane-1", NOW), garbage.slice(0, 40)).toBe("malformed");
    }
  });

  it("carries no token, in any encoding", async () => {
    const { ticket } = await issueTicket(["a-secret-token-value"], null, NOW);
    expect(ticket).not.toContain("a-secret-token-value");
    expect(atob(ticket.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/"))).not.toContain("secret");
  });
});
