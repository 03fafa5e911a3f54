/** `GET /v1/lanes/{lane}/history` over HTTP (docs/api.md, "Metrics"): the buckets, the window's validation, auth. */
import { describe, expect, it } from "vitest";
import { MINUTE_MS } from "../../src/shared/history.js";
import { claimOne, enqueue, expectError, get, post, setup } from "../helpers/http.js";

describe("GET /v1/lanes/{lane}/history", () => {
  it("answers every minute of the window, oldest first, counting what happened", async () => {
    const fixture = await setup();
    const minute = Math.ceil(fixture.clock.now() / MINUTE_MS) * MINUTE_MS;
    fixture.clock.set(minute + 1_000);
    await enqueue(fixture);
    await enqueue(fixture);
    const claimed = await claimOne(fixture, 300_000);
    fixture.clock.set(minute + MINUTE_MS + 1_000);
    expect((await post(`${fixture.base}/jobs/${claimed.id}/fail`, { token: claimed.lease.token, error: "no", retry: false })).status).toBe(200);

    const answer = await get(`${fixture.base}/history?windowMs=120000`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toContain("application/json");
    expect(answer.body).toEqual({
      buckets: [
        { at: minute, enqueued: 2, started: 1, completed: 0, failed: 0, depth: 1 },
        { at: minute + MINUTE_MS, enqueued: 0, started: 0, completed: 0, failed: 1, depth: 1 },
      ],
    });
    const hour = await get(`${fixture.base}/history`);
    expect(hour.body.buckets).toHaveLength(60);
    expect(hour.body.buckets.slice(-2)).toEqual(answer.body.buckets);
    expect((await get(`${fixture.base}/history?windowMs=86400000`)).body.buckets).toHaveLength(1440);
  });

  it("refuses a window that is not a duration of at most 24 hours with 400 invalid_request naming windowMs", async () => {
    const { base } = await setup();
    for (const query of ["windowMs=0", "windowMs=-5", "windowMs=86400001", "windowMs=abc", "windowMs=1.5", "windowMs="]) {
      const error = expectError(await get(`${base}/history?${query}`), 400, "invalid_request");
      expect(error.details, query).toEqual([expect.objectContaining({ path: ["windowMs"] })]);
    }
    expectError(await get(`${base}/history?window=60000`), 400, "invalid_request");
  });

  it("needs a token, and answers 400 for a lane name that breaks the pattern", async () => {
    const { base } = await setup();
    expectError(await get(`${base}/history`, { token: null }), 401, "unauthorized");
    expectError(await get(`/v1/lanes/-bad/history`), 400, "invalid_request");
  });
});
