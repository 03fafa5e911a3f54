/**
 * Many tenants in one lane (docs/api.md "Flow control", "Queues"): one tenant's backlog on its queue
 * beside many tenants with one job each, round-robin, every queue on the lane's queueDefaults.
 */
import { describe, expect, it } from "vitest";
import { claim, setup, value, type LaneStub } from "../../helpers/lane.js";

/** Claims `max` at a time, completing each job, until nothing is left: the queues in start order. */
async function drain(stub: LaneStub, max: number): Promise<(string | null)[]> {
  const order: (string | null)[] = [];
  for (;;) {
    const jobs = await claim(stub, { max });
    if (jobs.length === 0) return order;
    for (const job of jobs) {
      order.push(job.queue);
      value(await stub.complete(job.id, { token: job.lease.token }));
    }
  }
}

async function tenants(hot: number, cold: number, priorityOf: (i: number) => number = () => 0) {
  const fixture = await setup();
  value(await fixture.stub.configure({ fairness: "round-robin", concurrency: 100, queueDefaults: { concurrency: 1 } }));
  value(await fixture.stub.enqueueBatch({ jobs: Array.from({ length: hot }, () => ({ kind: "k", queue: "hot" })) }));
  value(await fixture.stub.enqueueBatch({ jobs: Array.from({ length: cold }, (_, i) => ({ kind: "k", queue: `t-${i}`, priority: priorityOf(i) })) }));
  return fixture;
}

describe("one hot tenant beside many one-job tenants", () => {
  it("starts every cold tenant's job before the hot tenant's second", async () => {
    const { stub } = await tenants(40, 60);
    const order = await drain(stub, 7);
    expect(order).toHaveLength(100);
    const lastCold = order.findLastIndex((q) => q !== "hot");
    const secondHot = order.indexOf("hot", order.indexOf("hot") + 1);
    expect(lastCold).toBeLessThan(secondHot);
  });

  it("still starts a higher priority first, whatever its queue's last start", async () => {
    const { stub } = await tenants(5, 20, (i) => (i === 19 ? 5 : 0));
    const order = await drain(stub, 3);
    expect(order[0]).toBe("t-19");
    expect(order.filter((q) => q === "hot")).toHaveLength(5);
  });
});
