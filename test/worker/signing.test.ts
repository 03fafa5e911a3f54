/** Signed URLs (src/worker/signing.ts): waitpoint callbacks and job links, HMAC-SHA256 under SIGNING_SECRET. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { callbackUrlFor, linkFor, SIGNATURE_LENGTH, signCallback, signLink, verifyCallback, verifyLink } from "../../src/worker/signing.js";

const SECRET = "a-signing-secret";
const NOW = 1_800_000_000_000;

/** `signature` with its character at `at` replaced by another base64url character. */
function flipped(signature: string, at: number): string {
  const ch = signature[at]!;
  return signature.slice(0, at) + (ch === "A" ? "B" : "A") + signature.slice(at + 1);
}

afterEach(() => vi.restoreAllMocks());

describe("a callback signature", () => {
  it("is 43 base64url characters without padding, the same each time for the same lane and id", async () => {
    const signature = await signCallback(SECRET, "lane-1", "wp-1");
    expect(signature).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(SIGNATURE_LENGTH).toBe(43);
    expect(await signCallback(SECRET, "lane-1", "wp-1")).toBe(signature);
    expect(await verifyCallback(SECRET, "lane-1", "wp-1", signature)).toBe(true);
  });

  it("verifies for its own lane and id only, under its own secret only", async () => {
    const signature = await signCallback(SECRET, "lane-1", "wp-1");
    expect(await verifyCallback(SECRET, "lane-2", "wp-1", signature)).toBe(false);
    expect(await verifyCallback(SECRET, "lane-1", "wp-2", signature)).toBe(false);
    // The parts are not run together: moving a character from the lane to the id breaks it.
    expect(await verifyCallback(SECRET, "lane-", "1wp-1", signature)).toBe(false);
    expect(await verifyCallback("another-secret", "lane-1", "wp-1", signature)).toBe(false);
  });

  it("refuses every changed character and every malformed signature", async () => {
    const signature = await signCallback(SECRET, "lane-1", "wp-1");
    for (let at = 0; at < signature.length; at++) expect(await verifyCallback(SECRET, "lane-1", "wp-1", flipped(signature, at)), `at ${at}`).toBe(false);
    for (const bad of ["", signature.slice(1), `${signature}A`, `${signature}=`, `${signature.slice(1)}+`, `${signature.slice(1)}/`, signature.slice(0, 42) + "%"]) {
      expect(await verifyCallback(SECRET, "lane-1", "wp-1", bad), bad).toBe(false);
    }
  });

  it("is not made without a secret, and nothing verifies then", async () => {
    for (const secret of [undefined, "", "  "]) {
      expect(await callbackUrlFor(secret, "lane-1", "wp-1")).toBeNull();
      expect(await verifyCallback(secret, "lane-1", "wp-1", await signCallback(SECRET, "lane-1", "wp-1"))).toBe(false);
      // Not even a signature made under the blank key itself.
      const underBlank = await hmac("  ", JSON.stringify(["switchyard callback v1", "lane-1", "wp-1"]));
      expect(await verifyCallback(secret, "lane-1", "wp-1", underBlank)).toBe(false);
    }
  });

  it("is carried by the callback URL's path", async () => {
    const signature = await signCallback(SECRET, "lane-1", "job@1795936561938.approval");
    expect(await callbackUrlFor(SECRET, "lane-1", "job@1795936561938.approval")).toBe(`/v1/callbacks/lane-1/waitpoints/job@1795936561938.approval/${signature}`);
  });

  it("is compared in constant time", async () => {
    const compare = vi.spyOn(crypto.subtle, "timingSafeEqual");
    const signature = await signCallback(SECRET, "lane-1", "wp-1");
    expect(await verifyCallback(SECRET, "lane-1", "wp-1", flipped(signature, 5))).toBe(false);
    expect(compare).toHaveBeenCalledTimes(1);
    expect(await verifyCallback(SECRET, "lane-1", "wp-1", signature)).toBe(true);
    expect(compare).toHaveBeenCalledTimes(2);
  });
});

describe("a link signature", () => {
  it("verifies its lane, id and expiry until it expires", async () => {
    const { url, expiresAt } = (await linkFor(SECRET, "lane-1", "job-1", 60_000, NOW))!;
    expect(expiresAt).toBe(NOW + 60_000);
    const signature = await signLink(SECRET, "lane-1", "job-1", expiresAt);
    expect(signature).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url).toBe(`/v1/links/lane-1/job-1/${expiresAt}/${signature}`);
    expect(await verifyLink(SECRET, "lane-1", "job-1", String(expiresAt), signature, NOW)).toBe(true);
    expect(await verifyLink(SECRET, "lane-1", "job-1", String(expiresAt), signature, expiresAt - 1)).toBe(true);
    expect(await verifyLink(SECRET, "lane-1", "job-1", String(expiresAt), signature, expiresAt)).toBe(false);
    expect(await verifyLink(SECRET, "lane-1", "job-1", String(expiresAt), signature, expiresAt + 3_600_000)).toBe(false);
  });

  it("refuses a changed lane, id, expiry or signature", async () => {
    const expiresAt = NOW + 60_000;
    const signature = await signLink(SECRET, "lane-1", "job-1", expiresAt);
    const at = String(expiresAt);
    expect(await verifyLink(SECRET, "lane-2", "job-1", at, signature, NOW)).toBe(false);
    expect(await verifyLink(SECRET, "lane-1", "job-2", at, signature, NOW)).toBe(false);
    expect(await verifyLink(SECRET, "lane-1", "job-1", String(expiresAt + 1), signature, NOW)).toBe(false);
    expect(await verifyLink("another-secret", "lane-1", "job-1", at, signature, NOW)).toBe(false);
    for (let i = 0; i < signature.length; i++) expect(await verifyLink(SECRET, "lane-1", "job-1", at, flipped(signature, i), NOW)).toBe(false);
    // Another spelling of the same instant is another link.
    for (const spelling of [`0${at}`, `${at}.0`, `+${at}`, `${at} `, "1e12", ""]) expect(await verifyLink(SECRET, "lane-1", "job-1", spelling, signature, NOW), spelling).toBe(false);
  });

  it("is never a callback's, nor a callback's a link's (distinct domain tags)", async () => {
    const callback = await signCallback(SECRET, "lane-1", "job-1");
    const link = await signLink(SECRET, "lane-1", "job-1", NOW + 60_000);
    expect(link).not.toBe(callback);
    expect(await verifyCallback(SECRET, "lane-1", "job-1", link)).toBe(false);
    expect(await verifyLink(SECRET, "lane-1", "job-1", String(NOW + 60_000), callback, NOW)).toBe(false);
  });

  it("is not made without a secret, and nothing verifies then", async () => {
    const signature = await signLink(SECRET, "lane-1", "job-1", NOW + 60_000);
    for (const secret of [undefined, "", "  "]) {
      expect(await linkFor(secret, "lane-1", "job-1", 60_000, NOW)).toBeNull();
      expect(await verifyLink(secret, "lane-1", "job-1", String(NOW + 60_000), signature, NOW)).toBe(false);
    }
  });

  it("is compared in constant time", async () => {
    const compare = vi.spyOn(crypto.subtle, "timingSafeEqual");
    const signature = await signLink(SECRET, "lane-1", "job-1", NOW + 60_000);
    expect(await verifyLink(SECRET, "lane-1", "job-1", String(NOW + 60_000), signature, NOW)).toBe(true);
    expect(compare).toHaveBeenCalledTimes(1);
  });
});

/** HMAC-SHA256 of `message` under `key`, base64url without padding: what a forger with a blank key would send. */
async function hmac(key: string, message: string): Promise<string> {
  const encoder = new TextEncoder();
  const imported = await crypto.subtle.importKey("raw", encoder.encode(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", imported, encoder.encode(message)));
  return btoa(String.fromCharCode(...mac)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
