/** Plain unit tests of the pure logic in src/shared/ and the auth helpers: no lane, no runtime state. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { backoffBoundsMs, backoffDelayMs } from "../../src/shared/backoff.js";
import { canonicalJson, exceedsBytes, serializeJson, utf8Length } from "../../src/shared/json.js";
import { MAX_PAYLOAD_BYTES } from "../../src/shared/defaults.js";
import { BatchEnqueueRequest, EnqueueRequest, simpleBatchEnqueueRequest, simpleEnqueueRequest } from "../../src/shared/schemas.js";
import { bearerToken, configuredTokens, tokenMatches } from "../../src/worker/auth.js";
import { base64url, systemEntropy } from "../../src/shared/clock.js";

describe("backoff", () => {
  it("doubles per attempt, capped at maxMs, and stays within [d/2, d]", () => {
    for (const attempt of [1, 2, 3, 10, 80]) {
      const [low, high] = backoffBoundsMs(attempt, 1_000, 60_000);
      expect(high).toBe(Math.min(60_000, 1_000 * 2 ** (attempt - 1)));
      expect(low).toBe(Math.floor(high / 2));
      for (const random of [0, 0.25, 0.999]) {
        const delay = backoffDelayMs(attempt, 1_000, 60_000, random);
        expect(delay).toBeGreaterThanOrEqual(low);
        expect(delay).toBeLessThanOrEqual(high);
      }
    }
  });

  it("treats an attempt below 1 as the first", () => {
    expect(backoffDelayMs(0, 1_000, 60_000, 0)).toBe(backoffDelayMs(1, 1_000, 60_000, 0));
  });
});

describe("canonical JSON", () => {
  it("sorts object keys at every depth, keeps array order", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
    expect(canonicalJson(undefined)).toBe("null");
  });
});

describe("byte limits", () => {
  it("counts UTF-8 bytes: ASCII 1, Latin 2, BMP 3, astral 4", () => {
    expect(utf8Length("abc")).toBe(3);
    expect(utf8Length("é")).toBe(2);
    expect(utf8Length("€")).toBe(3);
    expect(utf8Length("😀")).toBe(4);
    for (const text of ["", "héllo wörld", "日本語", "a😀b€c"]) expect(utf8Length(text)).toBe(new TextEncoder().encode(text).byteLength);
  });

  it("tells whether a text is over a limit, at the limit exactly", () => {
    expect(exceedsBytes("x".repeat(10), 10)).toBe(false);
    expect(exceedsBytes("x".repeat(11), 10)).toBe(true);
    expect(exceedsBytes("é".repeat(5), 10)).toBe(false);
    expect(exceedsBytes("é".repeat(6), 10)).toBe(true);
  });

  it("serializes a payload of exactly the limit, refuses one byte more, and refuses what is not JSON", () => {
    expect(serializeJson("x".repeat(MAX_PAYLOAD_BYTES - 2), "payload").ok).toBe(true);
    const over = serializeJson("x".repeat(MAX_PAYLOAD_BYTES - 1), "payload");
    expect(over.ok ? null : over.error.code).toBe("payload_too_large");
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const refused = serializeJson(cyclic, "payload");
    expect(refused.ok ? null : refused.error.code).toBe("invalid_request");
    expect(serializeJson(undefined, "result")).toEqual({ ok: true, value: "null" });
  });
});

describe("auth helpers", () => {
  it("reads a comma-separated token list, ignoring blanks", () => {
    expect(configuredTokens(undefined)).toEqual([]);
    expect(configuredTokens("")).toEqual([]);
    expect(configuredTokens(" a , ,b ")).toEqual(["a", "b"]);
  });

  it("takes the token of a Bearer header only", () => {
    expect(bearerToken("Bearer abc")).toBe("abc");
    expect(bearerToken(undefined)).toBeNull();
    expect(bearerToken("Basic abc")).toBeNull();
  });

  it("matches any configured token, and nothing else", async () => {
    expect(await tokenMatches("new", ["old", "new"])).toBe(true);
    expect(await tokenMatches("ne", ["old", "new"])).toBe(false);
    expect(await tokenMatches("", ["old"])).toBe(false);
  });
});

/** A check made without zod accepts only what `schema` accepts, with the same value, and accepts more than 100 of the inputs. */
function sameAsZod<T>(fast: (input: unknown) => T | null, schema: { safeParse(input: unknown): { success: boolean; data?: unknown } }, inputs: fc.Arbitrary<unknown>, seed: number, numRuns: number): void {
  let accepted = 0;
  fc.assert(
    fc.property(inputs, (input) => {
      const checked = fast(input);
      if (checked === null) return;
      accepted++;
      const parsed = schema.safeParse(input);
      expect(parsed.success).toBe(true);
      expect(checked).toEqual(parsed.data);
    }),
    { seed, numRuns },
  );
  expect(accepted).toBeGreaterThan(100); // the fast path was exercised, not only skipped
}

describe("the simple enqueue request, checked without zod", () => {
  const names = fc.oneof(fc.constantFrom("email.send", "a", "A-1:b_c.d", "x".repeat(128)), fc.constantFrom("", "bad kind", "-x", "x".repeat(129), "é"));
  const values = fc.oneof(names, fc.anything(), fc.constant(undefined));
  const keys = fc.constantFrom("id", "kind", "payload", "queue", "priority", "runAt", "junk");
  const requests = fc.oneof(
    fc.record({ kind: names, payload: fc.anything() }, { requiredKeys: ["kind"] }),
    fc.record({ id: names, kind: names, payload: fc.jsonValue() }, { requiredKeys: [] }),
    fc.dictionary(keys, values, { maxKeys: 4 }),
    fc.anything(),
  );

  it("accepts only what EnqueueRequest accepts, with the same value (fast-check seed 20261201)", () => {
    sameAsZod(simpleEnqueueRequest, EnqueueRequest, requests, 20261201, 2000);
  });

  it("leaves every other shape to zod", () => {
    for (const input of [null, "x", [], { kind: "a", queue: "q" }, { kind: "a", id: undefined }, { kind: 1 }, Object.create({ kind: "a" }), new Map()]) {
      expect(simpleEnqueueRequest(input)).toBeNull();
    }
    expect(simpleEnqueueRequest({ kind: "a", payload: { b: 1 }, id: "j-1" })).toEqual({ kind: "a", payload: { b: 1 }, id: "j-1" });
  });
});

describe("the batch of simple enqueue requests, checked without zod", () => {
  const simple = fc.record({ id: fc.constantFrom("j-1", "j-2", "a"), kind: fc.constantFrom("email.send", "a"), payload: fc.jsonValue() }, { requiredKeys: ["kind"], noNullPrototype: true });
  const other = fc.oneof(fc.record({ kind: fc.constant("a"), queue: fc.constantFrom("q", "") }), fc.record({ kind: fc.constantFrom("", "bad kind") }), fc.anything());
  const batches = fc.oneof(
    fc.record({ jobs: fc.array(simple, { minLength: 0, maxLength: 5 }) }, { noNullPrototype: true }),
    fc.record({ jobs: fc.array(fc.oneof(simple, other), { minLength: 1, maxLength: 5 }) }, { noNullPrototype: true }),
    fc.record({ jobs: fc.array(simple, { minLength: 1, maxLength: 3 }), extra: fc.anything() }, { requiredKeys: ["jobs"], noNullPrototype: true }),
    fc.constant({ jobs: Array.from({ length: 1001 }, () => ({ kind: "a" })) }),
    fc.anything(),
  );

  it("accepts only what BatchEnqueueRequest accepts, with the same value (fast-check seed 20261207)", () => {
    sameAsZod(simpleBatchEnqueueRequest, BatchEnqueueRequest, batches, 20261207, 1000);
  });

  it("leaves every other shape to zod", () => {
    for (const input of [null, [], { jobs: [] }, { jobs: [{ kind: "a" }, { kind: "a", queue: "q" }] }, { jobs: [{ kind: "a" }], traceparent: "x" }, { jobs: "x" }, Object.create({ jobs: [{ kind: "a" }] })]) {
      expect(simpleBatchEnqueueRequest(input)).toBeNull();
    }
    expect(simpleBatchEnqueueRequest({ jobs: [{ kind: "a", payload: 1 }, { id: "j-1", kind: "b" }] })).toEqual({ jobs: [{ kind: "a", payload: 1 }, { id: "j-1", kind: "b" }] });
  });
});

describe("lease tokens", () => {
  const btoaUrl = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_");

  it("encode bytes as base64url exactly as btoa would, without padding (fast-check seed 20261202)", () => {
    const bytes = fc.integer({ min: 0, max: 12 }).chain((groups) => fc.uint8Array({ minLength: groups * 3, maxLength: groups * 3 }));
    fc.assert(
      fc.property(bytes, (input) => {
        expect(base64url(input)).toBe(btoaUrl(input));
      }),
      { seed: 20261202, numRuns: 1000 },
    );
    expect(base64url(new Uint8Array([0xfb, 0xff, 0xbf]))).toBe("-_-_"); // both URL-safe characters
    expect(() => base64url(new Uint8Array(4))).toThrow(RangeError);
  });

  it("are 24 URL-safe characters, a new one each time", () => {
    const tokens = new Set(Array.from({ length: 1000 }, () => systemEntropy.token()));
    expect(tokens.size).toBe(1000);
    for (const token of tokens) expect(token).toMatch(/^[A-Za-z0-9_-]{24}$/);
  });
});
