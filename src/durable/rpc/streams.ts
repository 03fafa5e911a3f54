/**
 * What a lane answers about jobs' streams (results/): a pull consumer's chunk write, and a page of a
 * job's events for the SSE route, held while there is nothing new. The bodies of lane.ts's methods.
 */
import { STREAM_HOLD_MS } from "../../shared/defaults.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import { chunkTexts, StreamWriteRequest, type StreamPage, type StreamWritten } from "../../shared/stream.js";
import { parseId, parseJobCall } from "../input.js";
import type { StreamLog } from "../results/stream-log.js";
import type { StreamReaders } from "../results/stream-readers.js";

/** The parts streams' calls reach. */
export interface StreamParts {
  readonly streamLog: StreamLog;
  readonly streamReaders: StreamReaders;
}

export class StreamRpc {
  constructor(private readonly parts: StreamParts) {}

  writeStream(id: unknown, input: unknown): Result<StreamWritten> {
    const call = parseJobCall(id, StreamWriteRequest, input);
    if (!call.ok) return call;
    const texts = chunkTexts(call.value.request.chunks);
    if (!texts.ok) return texts;
    return this.parts.streamLog.write(call.value.id, call.value.request.token, texts.value);
  }

  /**
   * The events of job `id` after `after`, at once when there are any or the job is settled; else held
   * until there are, or `holdMs` (at most the lane's own hold) passes, then answered as they stand.
   */
  async streamEvents(id: unknown, after: unknown, holdMs: unknown): Promise<Result<StreamPage>> {
    const name = parseId(id);
    if (!name.ok) return name;
    if (typeof after !== "number" || !Number.isSafeInteger(after) || after < 0) return fail("invalid_request", "after must be an integer ≥ 0", [{ path: ["after"], message: "an integer ≥ 0" }]);
    const hold = holdMs === undefined ? 0 : holdMs;
    if (typeof hold !== "number" || !Number.isInteger(hold) || hold < 0) return fail("invalid_request", "holdMs must be an integer ≥ 0", [{ path: ["holdMs"], message: "an integer ≥ 0" }]);
    const log = this.parts.streamLog;
    const job = log.locate(name.value);
    if (job && hold > 0 && log.ready(job.seq, after) === false) {
      const held = this.parts.streamReaders.hold(job.seq, after, Math.min(hold, STREAM_HOLD_MS));
      if (held === null) {
        const now = log.page(name.value, after);
        return now.ok ? ok({ ...now.value, busy: true }) : now;
      }
      await held;
    }
    return log.page(name.value, after);
  }
}
