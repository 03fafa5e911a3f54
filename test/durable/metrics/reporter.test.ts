/**
 * The lane's metrics reporter on its own (metrics/reporter.ts), with a manual clock and a registry
 * peer that fails when told to: a failed report is tried again later, backing off to a minute, and
 * never thrown at the lane; an unchanged report is not sent; with recording off nothing is.
 */
import { describe, expect, it } from "vitest";
import type { RegistryPeer } from "../../../src/durable/env.js";
import type { LaneReport } from "../../../src/durable/metrics/exposition.js";
import { MetricsReporter } from "../../../src/durable/metrics/reporter.js";
import { ManualClock } from "../../../src/shared/clock.js";

const ZERO = { blocked: 0, queued: 0, running: 0, completing: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0 };
const STATS = { enqueued: 1, claimed: 0, completed: 0, failed: 0, cancelled: 0, interrupted: 0, retried: 0, recovered: 0, lost: 0, expired: 0, snoozed: 0, debounced: 0 };

function setup(options: { reports?: boolean } = {}) {
  const clock = new ManualClock(1_000_000);
  const state = { queued: 1, failNext: 0, callMs: 0, remembered: false, reports: [] as LaneReport[], changed: 0, pending: [] as Promise<unknown>[] };
  const registry: RegistryPeer = {
    register: async () => {},
    watch: async () => {},
    forget: async () => {},
    report: async (_lane, report) => {
      clock.advance(state.callMs); // how long the call takes
      if (state.failNext > 0) {
        state.failNext--;
        throw new Error("registry unreachable");
      }
      state.reports.push(report);
    },
  };
  const reporter = new MetricsReporter({
    object: "unit",
    clock,
    reports: options.reports ?? true,
    registry: () => registry,
    read: () => ({ counts: { ...ZERO, queued: state.queued }, stats: STATS, earliestRunAt: null, histograms: [] }),
    waitUntil: (p) => void state.pending.push(p),
    changed: () => void state.changed++,
    hasReported: () => state.remembered,
    setReported: (on) => void (state.remembered = on),
  });
  return { clock, state, reporter };
}

describe("the metrics reporter", () => {
  it("tries a failed report again later, two seconds after, then four, then eight, never throwing at the lane", async () => {
    const { clock, state, reporter } = setup();
    state.failNext = 3;
    reporter.noteChange();
    await reporter.settled();
    expect(state.reports).toHaveLength(0);
    expect(state.changed, "the wake takes up the report's term again").toBe(1);
    expect(reporter.dueAt()).toBe(clock.now() + 2000);
    clock.advance(2000);
    reporter.noteChange();
    await reporter.settled();
    expect(reporter.dueAt()).toBe(clock.now() + 4000);
    clock.advance(4000);
    reporter.noteChange();
    await reporter.settled();
    expect(reporter.dueAt()).toBe(clock.now() + 8000);
    clock.advance(8000);
    reporter.noteChange();
    await reporter.settled();
    expect(state.reports).toHaveLength(1);
    expect(reporter.dueAt(), "sent: nothing waits").toBeNull();
    expect(reporter.sent).toBe(4);
  });

  it("measures the backoff from the failure, not from the send: a slow call that fails is not tried again at once", async () => {
    const { clock, state, reporter } = setup();
    state.failNext = 1;
    state.callMs = 5000;
    reporter.noteChange();
    await reporter.settled();
    expect(reporter.dueAt(), "two seconds after it failed").toBe(clock.now() + 2000);
    state.callMs = 0;
    reporter.noteChange(); // a flush before then sends nothing
    await reporter.settled();
    expect(reporter.sent).toBe(1);
    clock.advance(2000);
    reporter.noteChange();
    await reporter.settled();
    expect(state.reports).toHaveLength(1);
    expect(reporter.sent).toBe(2);
  });

  it("sends a report only when it differs from the last one sent, at most once a second", async () => {
    const { clock, state, reporter } = setup();
    reporter.noteChange();
    await reporter.settled();
    clock.advance(5000);
    reporter.noteChange(); // nothing changed
    await reporter.settled();
    expect(state.reports).toHaveLength(1);
    state.queued = 2;
    reporter.noteChange();
    clock.advance(100);
    state.queued = 3;
    reporter.noteChange(); // within the second: waits
    await reporter.settled();
    expect(state.reports.map((r) => r.counts.queued)).toEqual([1, 2]);
    expect(reporter.dueAt()).toBe(clock.now() - 100 + 1000);
    clock.advance(900);
    reporter.noteChange();
    await reporter.settled();
    expect(state.reports.map((r) => r.counts.queued)).toEqual([1, 2, 3]);
  });

  it("sends nothing and asks for no wake while recording is off", async () => {
    const { state, reporter } = setup({ reports: false });
    reporter.noteChange();
    await reporter.settled();
    expect(state.reports).toHaveLength(0);
    expect(reporter.dueAt()).toBeNull();
  });
});
