/**
 * The dev worker's demo kinds (docs/api.md "Demo executors"): the payloads their schemas take and
 * refuse. Objects take other fields too; no kind declares a result schema.
 */
import { describe, expect, it } from "vitest";
import { KindChecks } from "../../src/durable/kinds/kind-checks.js";
import { DemoLane } from "../../src/worker/index.js";

const checks = new KindChecks(DemoLane.kinds);
const passes = (kind: string, payload: unknown) => checks.payload(kind, payload) === null;

describe("the demo kinds' payload schemas", () => {
  it("take what the demo executors take, other fields too", () => {
    for (const [kind, payload] of [
      ["demo.echo", { any: ["thing"] }], ["demo.echo", null], ["demo.deps", 7],
      ["demo.sleep", { ms: 0 }], ["demo.sleep", { ms: 10, progressEveryMs: 2, note: "x" }],
      ["demo.fail", { failTimes: 2 }], ["demo.steps", { steps: 3 }], ["demo.steps", { steps: 3, failAt: 1 }],
      ["demo.throw", { value: "bad-tostring" }], ["demo.sleepy", { sleeps: 1, ms: 5 }],
      ["demo.batch", {}], ["demo.batch", { fail: true }],
      ["demo.approval", null], ["demo.approval", { timeoutMs: 1 }], ["demo.approval", {}],
      ["demo.stream", { chunks: 1000, everyMs: 0 }], ["demo.stream", { chunks: 0 }],
    ] as const) expect(passes(kind, payload), `${kind} ${JSON.stringify(payload)}`).toBe(true);
  });

  it("refuse what breaks them, naming the field", () => {
    for (const [kind, payload, field] of [
      ["demo.sleep", { ms: -1 }, "ms"], ["demo.sleep", { ms: 1.5 }, "ms"], ["demo.sleep", { ms: 1, progressEveryMs: "2" }, "progressEveryMs"],
      ["demo.fail", {}, "failTimes"], ["demo.steps", { steps: 2, failAt: 0 }, "failAt"], ["demo.throw", { value: "other" }, "value"],
      ["demo.sleepy", { sleeps: 1 }, "ms"], ["demo.batch", { fail: "yes" }, "fail"], ["demo.approval", { timeoutMs: 0 }, "timeoutMs"],
      ["demo.stream", { chunks: 1001 }, "chunks"], ["demo.stream", { chunks: 1, everyMs: -1 }, "everyMs"],
    ] as const) {
      const refused = checks.payload(kind, payload);
      expect(refused && !(refused instanceof Promise) && refused.error.details, `${kind} ${JSON.stringify(payload)}`).toEqual([{ path: ["payload", field], message: expect.any(String) }]);
    }
    expect(checks.payload("demo.sleep", "5")).not.toBeNull();
    expect(checks.payload("demo.batch", [true])).not.toBeNull();
    expect(checks.payload("demo.batch", null)).not.toBeNull(); // unlike demo.approval's, its payload is an object

  });
});
