/**
 * The HTTP client answers URLs its caller can hand out as they are: a waitpoint's `callbackUrl` and a
 * job's link, resolved against the client's `baseUrl` (path prefix included).
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createHttpClient } from "../../src/client/http.js";
import { claimOne, PULL_KIND, setup, TOKEN } from "../helpers/http.js";

/** A client whose API is served under `baseUrl` (a prefix is stripped before the worker sees the request). */
function client(baseUrl: string) {
  const prefix = new URL(baseUrl).pathname.replace(/\/+$/, "");
  const worker = (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    expect(url.pathname.startsWith(`${prefix}/`)).toBe(true);
    url.pathname = url.pathname.slice(prefix.length);
    return exports.default.fetch(new Request(url, request));
  };
  return { http: createHttpClient({ baseUrl, token: TOKEN, fetch: worker }), worker };
}

describe.each(["http://switchyard.test", "http://switchyard.test/", "https://example.test/queue/"])("the HTTP client at %s", (baseUrl) => {
  it("answers a waitpoint's callbackUrl as an absolute URL that completes it without a token", async () => {
    const fixture = await setup();
    const { http, worker } = client(baseUrl);
    const lane = http.lane(fixture.lane);
    const { callbackUrl, waitpoint } = await lane.createWaitpoint({ id: "order-1.paid" });
    const root = baseUrl.replace(/\/+$/, "");
    expect(callbackUrl).toMatch(new RegExp(`^${root.replace(/[.]/g, "\\.")}/v1/callbacks/${fixture.lane}/waitpoints/order-1\\.paid/[A-Za-z0-9_-]{43}$`));
    const called = await worker(callbackUrl!, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ paid: true }) });
    expect(called.status).toBe(200);
    expect((await lane.getWaitpoint(waitpoint.id)).waitpoint).toMatchObject({ state: "completed", result: { paid: true } });
  });

  it("link(id, {ttlMs}) answers an absolute URL that reads the job without a token, and its expiry", async () => {
    const fixture = await setup();
    const { http, worker } = client(baseUrl);
    const lane = http.lane(fixture.lane);
    await lane.enqueue({ id: "j", kind: PULL_KIND, payload: {} });
    const before = Date.now();
    const link = await lane.link("j", { ttlMs: 60_000 });
    expect(link.url.startsWith(`${baseUrl.replace(/\/+$/, "")}/v1/links/${fixture.lane}/j/`)).toBe(true);
    expect(link.expiresAt).toBeGreaterThanOrEqual(before + 60_000);
    const read = await worker(link.url);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id: "j", lane: fixture.lane });
    expect((await lane.link("j")).expiresAt).toBeGreaterThan(before);
    await claimOne(fixture);
  });
});
