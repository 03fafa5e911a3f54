/**
 * The HTTP client's path parameters (lane names, job and waitpoint ids, queue, schedule and
 * checkpoint names): each one is one segment of the path, whatever it holds, so an id never reaches
 * another route; an id that could only be a dot segment (or none) is refused before anything is sent.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createHttpClient } from "../../src/client/http.js";
import { QueueError } from "../../src/shared/errors.js";
import { ManualClock } from "../../src/shared/clock.js";
import { PULL_KIND, T0, TOKEN } from "../helpers/http.js";
import { inject } from "../helpers/lane.js";
import { rejection as refusal } from "../helpers/rejections.js";

/** An HTTP client on the worker's own fetch, and the method and path (as the worker saw it) of every request it sent. */
function client() {
  const sent: string[] = [];
  const http = createHttpClient({
    baseUrl: "http://switchyard.test",
    token: TOKEN,
    fetch: (input, init) => {
      const request = new Request(input, init);
      sent.push(`${request.method} ${new URL(request.url).pathname}`);
      return exports.default.fetch(request);
    },
  });
  return { http, sent };
}

async function freshLane(name: string = crypto.randomUUID()): Promise<string> {
  await inject(env.LANE.getByName(name), new ManualClock(T0));
  return name;
}

describe("the HTTP client's path parameters", () => {
  it("a crafted waitpoint id reaches only the waitpoint route: the job it names is not cancelled", async () => {
    const { http, sent } = client();
    const lane = http.lane(await freshLane());
    await lane.enqueue({ id: "victim", kind: PULL_KIND, payload: {} });
    for (const crafted of ["../jobs/victim/cancel?", "../jobs/victim/cancel#", "..%2Fjobs%2Fvictim%2Fcancel%3F", "x/../../jobs/victim/cancel?"]) {
      const error = await refusal(lane.completeWaitpoint(crafted, {}));
      expect(["invalid_request", "not_found"]).toContain(error.code);
    }
    const refused = await refusal(lane.cancel("victim/../../waitpoints/w", {}));
    expect(["invalid_request", "not_found"]).toContain(refused.code);
    expect((await lane.get("victim")).state).toBe("queued");
    // Every request stayed under the route it was made for.
    expect(sent.filter((s) => s.startsWith("POST")).every((s) => /\/waitpoints\/[^/]+\/complete$|\/jobs\/[^/]+\/cancel$|\/jobs$/.test(s)), sent.join("\n")).toBe(true);
    expect(sent.some((s) => s.endsWith("/jobs/victim/cancel"))).toBe(false);
  });

  it("an id that could only be a dot segment, or none, is refused invalid_request before anything is sent", async () => {
    const { http, sent } = client();
    const lane = http.lane(await freshLane());
    await lane.enqueue({ id: "victim", kind: PULL_KIND, payload: {} });
    const before = sent.length;
    for (const id of ["", ".", ".."]) {
      expect((await refusal(lane.get(id))).code).toBe("invalid_request");
      expect((await refusal(lane.cancel(id, {}))).code).toBe("invalid_request");
      expect((await refusal(lane.completeWaitpoint(id, {}))).code).toBe("invalid_request");
      expect((await refusal(lane.getSchedule(id))).code).toBe("invalid_request");
      expect((await refusal(lane.queue(id))).code).toBe("invalid_request");
      expect((await refusal(lane.saveCheckpoint("victim", id, { token: "t", value: 1 }))).code).toBe("invalid_request");
      const streamed = await refusal((async () => {
        for await (const _ of (lane as ReturnType<typeof http.lane>).stream(id)) break;
      })());
      expect(streamed.code).toBe("invalid_request");
      expect(() => http.lane(id)).toThrow(QueueError);
    }
    expect(sent.length).toBe(before);
    expect((await lane.get("victim")).state).toBe("queued");
  });

  it("a lane name is one segment: a crafted one reaches no other lane", async () => {
    const { http } = client();
    const victim = await freshLane();
    await http.lane(victim).enqueue({ id: "victim", kind: PULL_KIND, payload: {} });
    const crafted = http.lane(`x/../${victim}`);
    expect(["invalid_request", "not_found"]).toContain((await refusal(crafted.cancel("victim", {}))).code);
    expect((await http.lane(victim).get("victim")).state).toBe("queued");
  });

  it("names with @, : and . still work: a lane, a job, a waitpoint, a queue, a schedule and a checkpoint", async () => {
    const { http } = client();
    const name = await freshLane(`t:${crypto.randomUUID()}.a`);
    const lane = http.lane(name);
    const { job } = await lane.enqueue({ id: "order:9.v1", kind: PULL_KIND, queue: "q:1.a", payload: {} });
    expect(job).toMatchObject({ id: "order:9.v1", lane: name, queue: "q:1.a" });
    expect((await lane.get("order:9.v1")).id).toBe("order:9.v1");
    // A schedule fire's id routes as a job id (unknown here: not found, not refused).
    expect((await refusal(lane.get("nightly:1.a@123"))).code).toBe("job_not_found");

    const waitpoint = "nightly:1.a@123.approval";
    expect((await lane.createWaitpoint({ id: waitpoint })).waitpoint.id).toBe(waitpoint);
    expect((await lane.getWaitpoint(waitpoint)).waitpoint.state).toBe("pending");
    expect((await lane.completeWaitpoint(waitpoint, { result: 1 })).waitpoint).toMatchObject({ id: waitpoint, state: "completed" });

    expect((await lane.queue("q:1.a")).queue).toBe("q:1.a");
    await lane.putQueue("q:2.b", { concurrency: 3 });
    expect((await lane.queue("q:2.b")).concurrency).toBe(3);

    await lane.putSchedule("every:1.min", { everyMs: 60_000, job: { kind: PULL_KIND, payload: {} } });
    expect((await lane.getSchedule("every:1.min")).name).toBe("every:1.min");
    await lane.deleteSchedule("every:1.min");

    const claimed = await lane.claim({ kinds: [PULL_KIND], leaseMs: 60_000 });
    const attempt = claimed.jobs.find((j) => j.id === "order:9.v1")!;
    expect(attempt).toBeDefined();
    await lane.saveCheckpoint("order:9.v1", "step:1.a", { token: attempt.lease.token, value: { n: 1 } });
    expect((await lane.checkpoints("order:9.v1")).checkpoints).toMatchObject([{ name: "step:1.a", value: { n: 1 } }]);
  });
});
