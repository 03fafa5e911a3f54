/**
 * `GET /v1/lanes/{lane}/waitpoints` (an extension of docs/api.md "Waitpoints", for the dashboard): a
 * lane's waitpoints of one state, in id order, a page at a time; a sharded lane's shards merged under
 * one cursor; bad filters refused; every reader of the lane allowed.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/worker/app.js";
import { shardOf } from "../../src/shared/shards.js";
import { expectError, get, post, read, request, setup, TOKEN } from "../helpers/http.js";
import { keyOn, setupSharded } from "../helpers/shards.js";

async function create(base: string, id: string, body: Record<string, unknown> = {}): Promise<any> {
  const answer = await post(`${base}/waitpoints`, { id, ...body });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body.waitpoint;
}

async function complete(base: string, id: string, result: unknown): Promise<void> {
  const answer = await post(`${base}/waitpoints/${id}/complete`, { result });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

/** Every page of a listing, followed by its cursors: the ids in order, and how many pages it took. */
async function everyPage(base: string, query: string): Promise<{ ids: string[]; pages: number; waitpoints: any[] }> {
  const waitpoints: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const answer = await get(`${base}/waitpoints?${query}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    waitpoints.push(...answer.body.waitpoints);
    cursor = answer.body.cursor;
    pages++;
    expect(pages).toBeLessThan(50);
  } while (cursor !== null);
  return { ids: waitpoints.map((w) => w.id), pages, waitpoints };
}

describe("GET /v1/lanes/{lane}/waitpoints", () => {
  it("lists the waitpoints of the state asked for, whole, in id order", async () => {
    const fixture = await setup();
    await create(fixture.base, "b-pending", { timeoutMs: 60_000 });
    await create(fixture.base, "a-pending");
    await create(fixture.base, "c-done");
    await complete(fixture.base, "c-done", { ok: 1 });

    const pending = await get(`${fixture.base}/waitpoints?state=pending`);
    expect(pending.status).toBe(200);
    expect(pending.body.cursor).toBeNull();
    expect(pending.body.waitpoints.map((w: any) => w.id)).toEqual(["a-pending", "b-pending"]);
    // Each one as its own read answers it.
    const one = await get(`${fixture.base}/waitpoints/b-pending`);
    expect(pending.body.waitpoints[1]).toEqual(one.body.waitpoint);

    const completed = await get(`${fixture.base}/waitpoints?state=completed`);
    expect(completed.body.waitpoints).toHaveLength(1);
    expect(completed.body.waitpoints[0]).toMatchObject({ id: "c-done", lane: fixture.lane, state: "completed", result: { ok: 1 } });
    expect((await get(`${fixture.base}/waitpoints?state=timedOut`)).body).toEqual({ waitpoints: [], cursor: null });
    // No state: every one of them.
    expect((await get(`${fixture.base}/waitpoints`)).body.waitpoints.map((w: any) => w.id)).toEqual(["a-pending", "b-pending", "c-done"]);
  });

  it("filters by an id prefix: the in-process waits of one job (`<job id>.<name>`)", async () => {
    const fixture = await setup();
    for (const id of ["job-1", "job-1.", "job-1.approval", "job-1.paid", "job-10.approval", "job-1-x", "job-2.approval"]) await create(fixture.base, id);
    const listed = await get(`${fixture.base}/waitpoints?prefix=job-1.`);
    expect(listed.status).toBe(200);
    expect(listed.body.waitpoints.map((w: any) => w.id)).toEqual(["job-1.", "job-1.approval", "job-1.paid"]);
    expect((await everyPage(fixture.base, "prefix=job-1.&limit=1")).ids).toEqual(["job-1.", "job-1.approval", "job-1.paid"]);
    expect((await get(`${fixture.base}/waitpoints?prefix=job-1.&state=completed`)).body.waitpoints).toEqual([]);
    // A cursor of another listing, before the prefix's ids, starts at the prefix (job-1-x sorts between).
    const other = await get(`${fixture.base}/waitpoints?limit=1`);
    expect(other.body.waitpoints[0].id).toBe("job-1");
    const resumed = await get(`${fixture.base}/waitpoints?prefix=job-1.&cursor=${encodeURIComponent(other.body.cursor)}`);
    expect(resumed.body.waitpoints.map((w: any) => w.id)).toEqual(["job-1.", "job-1.approval", "job-1.paid"]);
  });

  it("pages by its cursor, and an empty lane answers an empty page", async () => {
    const fixture = await setup();
    expect((await get(`${fixture.base}/waitpoints?state=pending`)).body).toEqual({ waitpoints: [], cursor: null });
    const ids = Array.from({ length: 7 }, (_, i) => `w-${i}`);
    for (const id of ids) await create(fixture.base, id);
    const listed = await everyPage(fixture.base, "state=pending&limit=3");
    expect(listed.ids).toEqual(ids);
    expect(listed.pages).toBe(3);
  });

  it("holds at most 4 MiB of JSON a page: fewer waitpoints when their results are large, every one by its cursor", async () => {
    const fixture = await setup();
    const big = "x".repeat(120 * 1024);
    const ids = Array.from({ length: 40 }, (_, i) => `big-${String(i).padStart(2, "0")}`);
    // A completion of an unknown id creates it completed, result and all.
    for (const id of ids) expect((await post(`${fixture.base}/waitpoints/${id}/complete`, { result: big })).status).toBe(201);
    const first = await get(`${fixture.base}/waitpoints?state=completed&limit=500`);
    expect(first.status).toBe(200);
    expect(first.body.waitpoints.length).toBeGreaterThan(0);
    expect(first.body.waitpoints.length).toBeLessThan(40);
    expect(new TextEncoder().encode(JSON.stringify(first.body)).length).toBeLessThanOrEqual(4 * 1024 * 1024);
    expect((await everyPage(fixture.base, "state=completed&limit=500")).ids).toEqual(ids);
  });

  it("refuses a bad state, limit or cursor with 400 invalid_request", async () => {
    const fixture = await setup();
    for (const query of ["state=done", "state=PENDING", "limit=0", "limit=501", "limit=2.5", "limit=x", "cursor=not-one-of-ours", "prefix=", "prefix=a%20b", "other=1"]) {
      expectError(await get(`${fixture.base}/waitpoints?${query}`), 400, "invalid_request");
    }
  });

  it("merges a lane of 4 shards: every shard's waitpoints, in id order, under one cursor", async () => {
    const fixture = await setupSharded(4);
    const ids = Array.from({ length: 12 }, (_, i) => `wp-${String(i).padStart(2, "0")}`);
    // They spread over the shards (a waitpoint lives in the shard its id hashes to).
    expect(new Set(ids.map((id) => shardOf(id, 4))).size).toBeGreaterThan(1);
    for (const id of ids) await create(fixture.base, id);
    await complete(fixture.base, "wp-05", null);

    const pending = await everyPage(fixture.base, "state=pending&limit=4");
    expect(pending.ids).toEqual(ids.filter((id) => id !== "wp-05"));
    expect(pending.pages).toBe(3);
    expect(pending.waitpoints.every((w) => w.state === "pending" && w.lane === fixture.lane)).toBe(true);
    expect((await everyPage(fixture.base, "state=completed")).ids).toEqual(["wp-05"]);
  });

  it("never skips a shard's waitpoints when that shard cut its page at 4 MiB: the merged page stops at the cut", async () => {
    const fixture = await setupSharded(2);
    const big = "x".repeat(120 * 1024);
    // 40 large ones on shard 0 (its page is cut by bytes, fewer than the limit), 5 small ones on shard 1 after them.
    const large = Array.from({ length: 40 }, (_, i) => keyOn(0, 2, `a-${String(i).padStart(2, "0")}`));
    const small = Array.from({ length: 5 }, (_, i) => keyOn(1, 2, `b-${i}`));
    for (const id of large) expect((await post(`${fixture.base}/waitpoints/${id}/complete`, { result: big })).status).toBe(201);
    for (const id of small) await create(fixture.base, id);
    const listed = await everyPage(fixture.base, "limit=500");
    expect(listed.ids).toEqual([...large, ...small].sort());
    expect(listed.pages).toBeGreaterThan(1);
  });

  it("is allowed to a viewer's token (every reader of the lane), refused outside its lanes", async () => {
    const fixture = await setup();
    await create(fixture.base, "seen");
    const keys = JSON.stringify([
      { token: "viewer-list-token", role: "viewer" },
      { token: "elsewhere-viewer-token", role: "viewer", lanes: ["elsewhere-*"] },
    ]);
    const app = createApp();
    const send = async (token: string) => read(await app.fetch(request("GET", `${fixture.base}/waitpoints?state=pending`, { token }), { ...env, API_TOKEN: TOKEN, API_KEYS: keys }, createExecutionContext()));
    const allowed = await send("viewer-list-token");
    expect(allowed.status).toBe(200);
    expect(allowed.body.waitpoints.map((w: any) => w.id)).toEqual(["seen"]);
    expectError(await send("elsewhere-viewer-token"), 403, "forbidden");
  });
});
