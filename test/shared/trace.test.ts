/** W3C `traceparent` parsing (src/shared/trace.ts): plain unit tests, and a property over generated headers. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseTraceparent, traceIdOf } from "../../src/shared/trace.js";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID = "00f067aa0ba902b7";
const V00 = `00-${TRACE_ID}-${PARENT_ID}-01`;

const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
/** Valid ids are not all zeros. */
const id = (n: number) => hex(n).filter((h) => /[^0]/.test(h));

describe("parseTraceparent", () => {
  it("reads version 00 into its parts, kept as given", () => {
    expect(parseTraceparent(V00)).toEqual({ traceparent: V00, traceId: TRACE_ID, parentId: PARENT_ID, flags: "01" });
    expect(traceIdOf(V00)).toBe(TRACE_ID);
  });

  it("reads a later version's first 55 characters, followed by the end or a dash", () => {
    expect(parseTraceparent(`cc-${TRACE_ID}-${PARENT_ID}-09`)?.traceparent).toBe(`cc-${TRACE_ID}-${PARENT_ID}-09`);
    expect(parseTraceparent(`01-${TRACE_ID}-${PARENT_ID}-01-anything-else`)).toEqual({ traceparent: `01-${TRACE_ID}-${PARENT_ID}-01`, traceId: TRACE_ID, parentId: PARENT_ID, flags: "01" });
    expect(parseTraceparent(`01-${TRACE_ID}-${PARENT_ID}-01x`)).toBeNull();
  });

  it("refuses what the spec refuses", () => {
    for (const bad of [
      "",
      V00.slice(0, 54),
      `${V00}-`,
      `${V00}0`,
      V00.toUpperCase(),
      `00-${TRACE_ID.toUpperCase()}-${PARENT_ID}-01`,
      `ff-${TRACE_ID}-${PARENT_ID}-01`,
      `ff-${TRACE_ID}-${PARENT_ID}-01-more`,
      `00-${"0".repeat(32)}-${PARENT_ID}-01`,
      `00-${TRACE_ID}-${"0".repeat(16)}-01`,
      `0-${TRACE_ID}-${PARENT_ID}-01`,
      `00-${TRACE_ID}-${PARENT_ID}-1`,
      `00 ${TRACE_ID} ${PARENT_ID} 01`,
      ` ${V00}`,
    ]) {
      expect(parseTraceparent(bad), JSON.stringify(bad)).toBeNull();
    }
  });

  it("accepts every valid version-00 header and gives back its parts; any other character at any place is refused or changes them", () => {
    fc.assert(
      fc.property(id(32), id(16), hex(2), fc.nat(54), fc.constantFrom("G", "A", "-", " ", "z"), (traceId, parentId, flags, at, char) => {
        const header = `00-${traceId}-${parentId}-${flags}`;
        expect(parseTraceparent(header)).toEqual({ traceparent: header, traceId, parentId, flags });
        const changed = header.slice(0, at) + char + header.slice(at + 1);
        if (changed !== header) expect(parseTraceparent(changed)).toBeNull();
      }),
    );
  });
});
