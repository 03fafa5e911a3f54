/** The recording switch (docs/operations.md, "History"): `RECORDING` and a lane class's own choice. */
import { describe, expect, it } from "vitest";
import { recordingOn } from "../../../src/durable/history/recording.js";

describe("recordingOn", () => {
  it("is on unless RECORDING says off", () => {
    expect(recordingOn({})).toBe(true);
    expect(recordingOn({ RECORDING: "on" })).toBe(true);
    expect(recordingOn({ RECORDING: "" })).toBe(true);
    expect(recordingOn({ RECORDING: "off" })).toBe(false);
    expect(recordingOn({ RECORDING: " OFF " })).toBe(false);
  });

  it("takes a lane class's own choice over RECORDING", () => {
    expect(recordingOn({ RECORDING: "off" }, true)).toBe(true);
    expect(recordingOn({}, false)).toBe(false);
    expect(recordingOn({ RECORDING: "on" }, undefined)).toBe(true);
  });
});
