/**
 * Schedules over HTTP (docs/api.md "Schedules") and through both clients; the `<name>@<T>` job ids they
 * enqueue, which every job route accepts and no enqueue may choose.
 */
import { env, exports } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createHttpClient } from "../../src/client/http.js";
import { createLaneClient } from "../../src/client/rpc.js";
import type { LaneClient } from "../../src/client/types.js";
import { QueueError } from "../../src/shared/errors.js";
import { call, expectError, get, post, PULL_KIND, setup, T0, TOKEN, type LaneFixture } from "../helpers/http.js";

const MINUTE = 60_000;
const put = (path: string, json: unknown) => call("PUT", path, { json });
const del = (path: string) => call("DELETE", path);

/** A lane whose schedule `tick` fired once at T0 + 1 min: the job `tick@<T0 + 1 min>` is queued. */
async function fired(fixture: LaneFixture): Promise<string> {
  expect((await put(`${fixture.base}/schedules/tick`, { everyMs: MINUTE, job: { kind: PULL_KIND, payload: { n: 1 } } })).status).toBe(201);
  fixture.clock.set(T0 + MINUTE);
  expect(await runDurableObjectAlarm(fixture.stub)).toBe(true);
  return `tick@${T0 + MINUTE}`;
}

describe("schedule routes", () => {
  it("PUT creates (201) then replaces (200); GET reads; the list is by name; DELETE deletes", async () => {
    const fixture = await setup();
    const { base } = fixture;
    const created = await put(`${base}/schedules/report`, { cron: "0 9 * * 1-5", timezone: "Europe/Paris", job: { kind: PULL_KIND, payload: { to: "ops" } } });
    expect(created.status).toBe(201);
    expect(Object.keys(created.body)).toEqual(["schedule"]);
    expect(created.body.schedule).toMatchObject({
      name: "report", cron: "0 9 * * 1-5", timezone: "Europe/Paris", everyMs: null, paused: false, lastRunAt: null, lastJobId: null,
      job: { kind: PULL_KIND, payload: { to: "ops" } }, createdAt: T0, updatedAt: T0,
    });
    expect(created.body.schedule.nextRunAt).toBeGreaterThan(T0);

    fixture.clock.advance(1_000);
    const replaced = await put(`${base}/schedules/report`, { everyMs: 5 * MINUTE, job: { kind: PULL_KIND } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.schedule).toMatchObject({ cron: null, timezone: null, everyMs: 5 * MINUTE, nextRunAt: T0 + 1_000 + 5 * MINUTE, createdAt: T0, updatedAt: T0 + 1_000 });
    expect((await get(`${base}`)).body.nextWakeAt).toBe(T0 + 1_000 + 5 * MINUTE);

    const read = await get(`${base}/schedules/report`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(replaced.body.schedule);

    await put(`${base}/schedules/alpha`, { everyMs: MINUTE, paused: true, job: { kind: PULL_KIND } });
    const list = await get(`${base}/schedules`);
    expect(list.status).toBe(200);
    expect(list.body.schedules.map((s: { name: string }) => s.name)).toEqual(["alpha", "report"]);
    expect(list.body.schedules[0]).toMatchObject({ paused: true, nextRunAt: null });
    expect(list.body.cursor).toBeNull();

    expect(await del(`${base}/schedules/report`)).toMatchObject({ status: 200, body: { deleted: true } });
    expectError(await del(`${base}/schedules/report`), 404, "schedule_not_found");
    expectError(await get(`${base}/schedules/report`), 404, "schedule_not_found");
  });

  it.each([
    ["cron", { cron: "*/61 * * * *", job: { kind: PULL_KIND } }],
    ["cron", { cron: "0 0 30 2 *", job: { kind: PULL_KIND } }],
    ["timezone", { cron: "0 * * * *", timezone: "Europe/Atlantis", job: { kind: PULL_KIND } }],
    ["everyMs", { everyMs: 500, job: { kind: PULL_KIND } }],
    ["everyMs", { everyMs: 1.5e3 + 0.5, job: { kind: PULL_KIND } }],
    ["job", { everyMs: MINUTE }],
  ])("answers 400 naming %s, and creates nothing", async (field, body) => {
    const { base } = await setup();
    const error = expectError(await put(`${base}/schedules/bad`, body), 400, "invalid_request");
    expect(error.details.map((d: { path: unknown[] }) => d.path[0])).toContain(field);
    expect(error.message).toContain(field);
    expectError(await get(`${base}/schedules/bad`), 404, "schedule_not_found");
  });

  it("refuses a schedule name that breaks the pattern, a body that is not JSON, and a payload over the limit", async () => {
    const { base } = await setup();
    expectError(await put(`${base}/schedules/a@b`, { everyMs: MINUTE, job: { kind: PULL_KIND } }), 400, "invalid_request");
    expectError(await put(`${base}/schedules/${"n".repeat(101)}`, { everyMs: MINUTE, job: { kind: PULL_KIND } }), 400, "invalid_request");
    expectError(await call("PUT", `${base}/schedules/x`, { raw: "everyMs=1000", headers: { "content-type": "text/plain" } }), 415, "unsupported_media_type");
    expectError(await put(`${base}/schedules/x`, { everyMs: MINUTE, job: { kind: PULL_KIND, payload: "x".repeat(130 * 1024) } }), 413, "payload_too_large");
    expect((await get(`${base}/schedules`)).body.schedules).toEqual([]);
  });
});

describe("the jobs a schedule enqueues", () => {
  it("have ids <name>@<T> that every job route takes", async () => {
    const fixture = await setup();
    const { base } = fixture;
    const id = await fired(fixture);
    expect((await get(`${base}/jobs/${id}`)).body).toMatchObject({ id, runAt: T0 + MINUTE, payload: { n: 1 }, state: "queued" });
    expect((await get(`${base}/jobs?state=queued`)).body.jobs.map((j: { id: string }) => j.id)).toEqual([id]);
    const claim = async () => (await post(`${base}/claims`, { kinds: [PULL_KIND] })).body.jobs[0];
    const claimed = await claim();
    expect(claimed.id).toBe(id);
    const renewed = await post(`${base}/jobs/${id}/renew`, { token: claimed.lease.token });
    expect(renewed.status).toBe(200);
    expectError(await post(`${base}/jobs/${id}/complete`, { token: claimed.lease.token }), 409, "lease_superseded");
    expect((await post(`${base}/jobs/${id}/release`, { token: renewed.body.lease.token })).body.job).toMatchObject({ id, state: "queued" });
    const again = await claim();
    expect((await post(`${base}/jobs/${id}/fail`, { token: again.lease.token, error: "no", retry: false })).body.job).toMatchObject({ id, outcome: "failed" });
    expect((await post(`${base}/jobs/${id}/requeue`, {})).body.job).toMatchObject({ id, state: "queued" });
    expect((await post(`${base}/jobs/${id}/cancel`, {})).body).toMatchObject({ status: "cancelled", job: { id } });
    expect((await post(`${base}/jobs/${id}/requeue`, {})).status).toBe(200);
    const third = await claim();
    expect((await post(`${base}/jobs/${id}/complete`, { token: third.lease.token, result: 1 })).body.job).toMatchObject({ id, outcome: "completed" });
  });

  it("cannot be chosen by an enqueue, one or in a batch", async () => {
    const { base } = await setup();
    const one = expectError(await post(`${base}/jobs`, { id: "tick@4000000060000", kind: PULL_KIND }), 400, "invalid_request");
    expect(one.details).toEqual([expect.objectContaining({ path: ["id"] })]);
    const batch = expectError(await post(`${base}/jobs/batch`, { jobs: [{ id: "tick@1", kind: PULL_KIND }] }), 400, "invalid_request");
    expect(batch.details).toEqual([expect.objectContaining({ path: ["jobs", 0, "id"] })]);
    expect((await get(`${base}/jobs`)).body.jobs).toEqual([]);
  });

  it("answers 404 job_not_found for a well-formed schedule id that was never fired", async () => {
    const { base } = await setup();
    expectError(await get(`${base}/jobs/tick@123`), 404, "job_not_found");
    expectError(await get(`${base}/jobs/tick@12x`), 400, "invalid_request");
  });
});

/** The HTTP client, talking to the worker's own fetch. */
const http = () => createHttpClient({ baseUrl: "http://switchyard.test", token: TOKEN, fetch: (input, init) => exports.default.fetch(new Request(input, init)) });

describe.each([
  ["the RPC client", (lane: string): LaneClient => createLaneClient(env.LANE).lane(lane)],
  ["the HTTP client", (lane: string): LaneClient => http().lane(lane)],
])("%s", (_name, client) => {
  it("puts, reads, lists and deletes schedules", async () => {
    const fixture = await setup();
    const lane = client(fixture.lane);
    const { schedule } = await lane.putSchedule("tick", { everyMs: MINUTE, job: { kind: PULL_KIND, payload: { n: 1 } } });
    expect(schedule).toMatchObject({ name: "tick", everyMs: MINUTE, nextRunAt: T0 + MINUTE, job: { payload: { n: 1 } } });
    expect((await lane.putSchedule("tick", { cron: "*/5 * * * *", job: { kind: PULL_KIND } })).schedule.cron).toBe("*/5 * * * *");
    expect(await lane.getSchedule("tick")).toMatchObject({ cron: "*/5 * * * *", timezone: "UTC" });
    expect(await lane.listSchedules()).toMatchObject({ schedules: [{ name: "tick" }], cursor: null });
    expect(await lane.deleteSchedule("tick")).toEqual({ deleted: true });
    const missing = await lane.getSchedule("tick").catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(QueueError);
    expect((missing as QueueError).code).toBe("schedule_not_found");
    const bad = await lane.putSchedule("tick", { cron: "nope", job: { kind: PULL_KIND } }).catch((e: unknown) => e);
    expect((bad as QueueError).code).toBe("invalid_request");
  });

  it("reads a fired job by its <name>@<T> id", async () => {
    const fixture = await setup();
    const id = await fired(fixture);
    expect(await client(fixture.lane).get(id)).toMatchObject({ id, runAt: T0 + MINUTE });
  });
});
