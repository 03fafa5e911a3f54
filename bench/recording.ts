/**
 * What recording costs the drain (docs/benchmarks.md): the bench's LANE class again with its
 * recording (per-minute history and metrics reports) off, bound as QUIET_LANE, so that one run
 * drains both; bench/recording-run.ts compares them.
 */
import { BenchLane } from "./lanes.js";

/** QUIET_LANE: BenchLane, its recording off by its class (`defineLane({ recording: false })`'s option). */
export class QuietBenchLane extends BenchLane {
  static override options = { ...BenchLane.options, recording: false };
}
