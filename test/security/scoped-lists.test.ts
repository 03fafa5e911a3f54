/**
 * What a scoped token's lists say about lanes outside its scope (docs/api.md "The lane",
 * "Dependencies"): nothing. The list of lanes and its cursor name only its lanes, page after page;
 * a job's dependents list only jobs of its lanes.
 */
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/worker/app.js";
import { read, request, TOKEN, type Answer } from "../helpers/http.js";

const app = createApp();
const VIEWER = "scoped-list-viewer";
const PRODUCER = "scoped-list-producer";

/** One request through the app with a scoped viewer and producer reaching `lanes`. */
async function send(method: string, path: string, token: string, lanes: string[], json?: unknown): Promise<Answer> {
  const API_KEYS = JSON.stringify([
    { token: VIEWER, role: "viewer", lanes },
    { token: PRODUCER, role: "producer", lanes },
  ]);
  const response = await app.fetch(request(method, path, { token, ...(json === undefined ? {} : { json }) }), { ...env, API_TOKEN: TOKEN, API_KEYS }, createExecutionContext());
  return read(response);
}

describe("a scoped token's lists", () => {
  it("pages the lanes one by one through its own only: no page and no cursor names a lane outside its scope", async () => {
    const p = `sl${crypto.randomUUID().slice(0, 8)}`;
    const scope = [`${p}-a*`, `${p}-c`];
    // In name order, lanes in and out of scope interleave (`-c1` is out: `-c` is an exact name).
    const inside = [`${p}-a1`, `${p}-a2`, `${p}-c`];
    const outside = [`${p}-0`, `${p}-Z`, `${p}-A1`, `${p}-b1`, `${p}-b2`, `${p}-c1`, `${p}-d`];
    for (const lane of [...inside, ...outside]) {
      expect((await send("POST", `/v1/lanes/${lane}/jobs`, TOKEN, scope, { kind: "email.send" })).status).toBe(201);
    }
    const seen: string[] = [];
    const cursors: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Answer = await send("GET", `/v1/lanes?limit=1${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`, VIEWER, scope);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      expect(page.body.lanes.length).toBeLessThanOrEqual(1);
      seen.push(...page.body.lanes.map((l: { lane: string }) => l.lane));
      cursor = page.body.cursor;
      if (cursor !== null) cursors.push(cursor);
      expect(++pages).toBeLessThanOrEqual(inside.length + 1);
    } while (cursor !== null);
    expect(seen).toEqual(inside);
    for (const c of cursors) for (const lane of outside) expect(c.includes(lane), `cursor ${c} names ${lane}`).toBe(false);
    // Each page held a lane: the token never walks pages that are empty for it.
    expect(pages).toBe(inside.length);
  });

  it("lists a job's dependents only in lanes the token reaches", async () => {
    const p = `sd${crypto.randomUUID().slice(0, 8)}`;
    const [parentLane, mineLane, theirLane] = [`${p}-mine-p`, `${p}-mine-c`, `${p}-theirs`];
    const admin = (path: string, json: unknown) => send("POST", path, TOKEN, ["x"], json);
    expect((await admin(`/v1/lanes/${parentLane}/jobs`, { id: "parent", kind: "email.send" })).status).toBe(201);
    for (const [lane, id] of [[mineLane, "c-mine"], [theirLane, "c-theirs"], [parentLane, "c-same"]] as const) {
      const child = await admin(`/v1/lanes/${lane}/jobs`, { id, kind: "email.send", dependsOn: [{ lane: parentLane, id: "parent" }] });
      expect(child.status, JSON.stringify(child.body)).toBe(201);
    }
    const path = `/v1/lanes/${parentLane}/jobs/parent/dependents`;
    const all = await send("GET", path, TOKEN, ["x"]);
    expect(all.body.dependents).toHaveLength(3);
    for (const token of [VIEWER, PRODUCER]) {
      const scoped = await send("GET", path, token, [`${p}-mine-*`]);
      expect(scoped.status).toBe(200);
      expect(scoped.body.dependents).toEqual(expect.arrayContaining([{ lane: mineLane, id: "c-mine" }, { lane: parentLane, id: "c-same" }]));
      expect(scoped.body.dependents).toHaveLength(2);
    }
  });
});
