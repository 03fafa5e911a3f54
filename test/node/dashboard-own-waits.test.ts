/** The dashboard's job view lists a job's own in-process waits: `<job id>.<name>`, a name without a '.'. */
import { describe, expect, it } from "vitest";
import { ownWaits } from "../../src/worker/dashboard/browser/own-waits.js";

describe("the dashboard's in-process waits of a job", () => {
  it("keeps only the ids whose rest after '<job id>.' holds no '.': job a.b's waits are not job a's", () => {
    const listed = [{ id: "a.approval" }, { id: "a.b.c" }, { id: "a.b.approval" }, { id: "a.paid:1" }, { id: "a." }];
    expect(ownWaits("a", listed).map((w) => w.id)).toEqual(["a.approval", "a.paid:1"]);
    expect(ownWaits("a.b", listed).map((w) => w.id)).toEqual(["a.b.c", "a.b.approval"]);
    expect(ownWaits("nightly@123", [{ id: "nightly@123.approval" }, { id: "nightly@1234.x" }]).map((w) => w.id)).toEqual(["nightly@123.approval"]);
  });
});
