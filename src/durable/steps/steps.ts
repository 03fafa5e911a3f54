/**
 * Durable steps for in-process executors (docs/api.md "Checkpoints"): `ctx.step`, `ctx.checkpoints` and
 * `ctx.progress` over one attempt. The job's checkpoints are read once, on first use, so an attempt
 * that records none costs its claim nothing; every write goes through the fence with the attempt's
 * current token (the dispatcher's recorder holds it).
 *
 * The attempt keeps the job's limits itself: while it holds the lease it is the job's only writer,
 * and it knows every checkpoint the job has (all were written at or below its generation), so its
 * count is exact and its writes need not walk the job's rows. A write that would break a limit is
 * refused here, before anything is written.
 */
import { MAX_CHECKPOINT_BYTES, MAX_CHECKPOINT_BYTES_PER_JOB, MAX_CHECKPOINTS_PER_JOB, MAX_DURATION_MS, MAX_PROGRESS_BYTES, MAX_SNOOZE_MS, MAX_STREAM_CHUNK_BYTES, NAME_PATTERN } from "../../shared/defaults.js";
import { QueueError, type ErrorBody, type Result } from "../../shared/errors.js";
import type { DependencyOutcome, Json, WaitForOutcome } from "../../shared/job.js";
import { MAX_WAITPOINT_TIMEOUT_MS } from "../../shared/waitpoint.js";
import { waitpointIdOf } from "../../shared/wait-names.js";
import { serializeJson, utf8Length } from "../../shared/json.js";
import type { ExecutorContext } from "../attempts/executors.js";
import { parseName } from "../input.js";

/** What the steps of one attempt need of the dispatcher. */
export interface AttemptRecorder {
  /** The job's checkpoints up to the attempt's generation, name → JSON text. */
  recorded(): Map<string, string>;
  /** A fenced checkpoint write with the attempt's current token (limits are kept here, not there), now or at the end of the turn. */
  save(name: string, valueJson: string): Result<unknown> | Promise<Result<unknown>>;
  /** A fenced progress write with the attempt's current token. */
  progress(progressJson: string): Result<unknown>;
  /** A fenced write of one chunk (its JSON) to the job's stream, with the attempt's current token. */
  stream(chunkJson: string): Result<unknown>;
  /** Why the attempt's writes are refused before they are tried (it was aborted, or its executor returned); null while it runs. */
  over(): Error | null;
  /** A write was refused: the error to reject with (a refusal of the fence aborts the attempt first). */
  refused(error: ErrorBody): Error;
  /** The lane's clock. */
  now(): number;
  /** A durable sleep asks the attempt to end in a snooze until `wakeAt`: the error its promise rejects with. */
  snooze(wakeAt: number): Error;
  /** The job's id and lane: an in-process wait's waitpoint is `<job id>.<name>`, in the job's lane. */
  readonly jobId: string;
  readonly lane: string;
  /** What the job's dependencies and earlier waits settled as (`ctx.dependencies`). */
  dependencies(): DependencyOutcome[];
  /** A wait asks the attempt to end in a wait on waitpoint `waitpoint`: the error its promise rejects with. */
  wait(waitpoint: string, timeoutMs: number | undefined): Error;
}

export type DurableSteps = Pick<ExecutorContext, "step" | "checkpoints" | "progress" | "sleep" | "sleepUntil" | "stream" | "waitFor" | "waitpointId">;

/**
 * An executor's context whose steps are built on first use (`steps`): most attempts take no step, and
 * the steps and their recorder are a dozen closures (each one named again by a bundler that keeps
 * names) that every start would pay. Getters of the literal itself, so that a spread or a
 * destructuring of the context sees them as the fields they were.
 */
export function executorContext<E>(
  base: Omit<ExecutorContext<E>, keyof DurableSteps | "dependencies" | "traceparent">,
  steps: () => DurableSteps,
  dependencies: () => DependencyOutcome[],
): ExecutorContext<E> {
  return {
    signal: base.signal,
    job: base.job,
    attempt: base.attempt,
    env: base.env,
    traceparent: base.job.traceparent,
    get dependencies() {
      return dependencies(); // read once by its maker (payloads/held-dependencies.ts `wholeForExecutor`)
    },
    get sleep() {
      return steps().sleep;
    },
    get sleepUntil() {
      return steps().sleepUntil;
    },
    get step() {
      return steps().step;
    },
    get checkpoints() {
      return steps().checkpoints;
    },
    get progress() {
      return steps().progress;
    },
    get stream() {
      return steps().stream;
    },
    get waitFor() {
      return steps().waitFor;
    },
    get waitpointId() {
      return steps().waitpointId;
    },
  };
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  value !== null && (typeof value === "object" || typeof value === "function") && typeof (value as { then?: unknown }).then === "function";

export function durableSteps(recorder: AttemptRecorder): DurableSteps {
  /** The job's checkpoints as this attempt knows them, name → JSON text, and their bytes in all. */
  let recorded: Map<string, string> | null = null;
  let bytes = 0;
  const loaded = (): Map<string, string> => {
    if (recorded === null) {
      recorded = recorder.recorded();
      for (const json of recorded.values()) bytes += utf8Length(json);
    }
    return recorded;
  };

  /** Throws what the attempt's executor should see once the attempt is over. */
  const guard = (): void => {
    const over = recorder.over();
    if (over) throw over;
  };

  /** Throws what the attempt's executor should see of a refused write. */
  const check = (written: Result<unknown>): void => {
    if (!written.ok) throw recorder.refused(written.error);
  };

  const checkName = (name: string): void => {
    if (typeof name === "string" && NAME_PATTERN.test(name)) return;
    const checked = parseName(name, "checkpoint");
    if (!checked.ok) throw QueueError.from(checked.error);
  };

  /** Records `value` under a checked `name`; answers its JSON once the record has landed. */
  const save = (name: string, value: unknown): string | Promise<string> => {
    const json = serializeJson(value, `checkpoint ${name}`, MAX_CHECKPOINT_BYTES);
    if (!json.ok) throw QueueError.from(json.error);
    guard();
    const known = loaded();
    const old = known.get(name);
    const after = bytes - (old === undefined ? 0 : utf8Length(old)) + utf8Length(json.value);
    if ((old === undefined && known.size >= MAX_CHECKPOINTS_PER_JOB) || after > MAX_CHECKPOINT_BYTES_PER_JOB) {
      throw new QueueError(
        "checkpoint_limit",
        `checkpoint ${name} would take the job past ${MAX_CHECKPOINTS_PER_JOB} checkpoint names or ${MAX_CHECKPOINT_BYTES_PER_JOB} bytes of checkpoint values`,
      );
    }
    // Counted before the write lands: a step running beside this one sees it (a refusal ends the attempt).
    known.set(name, json.value);
    bytes = after;
    const written = recorder.save(name, json.value);
    if (!isThenable(written)) {
      check(written);
      return json.value;
    }
    return written.then((result) => {
      check(result);
      return json.value;
    });
  };

  return {
    // Not an async function: a job may run a thousand steps, and each extra promise and turn shows.
    step<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
      try {
        checkName(name);
        const earlier = loaded().get(name);
        if (earlier !== undefined) return Promise.resolve(JSON.parse(earlier) as T);
        const ran = fn();
        const saved = isThenable(ran) ? Promise.resolve(ran).then((value) => save(name, value)) : save(name, ran);
        return isThenable(saved) ? Promise.resolve(saved).then((json) => JSON.parse(json) as T) : Promise.resolve(JSON.parse(saved) as T);
      } catch (error) {
        return Promise.reject(error);
      }
    },
    checkpoints: {
      async load() {
        const values: Record<string, Json> = {};
        for (const [name, json] of loaded()) values[name] = JSON.parse(json) as Json;
        return values;
      },
      async save(name, value) {
        checkName(name);
        await save(name, value);
      },
    },
    async progress(value) {
      const json = serializeJson(value, "progress", MAX_PROGRESS_BYTES);
      if (!json.ok) throw QueueError.from(json.error);
      guard();
      check(recorder.progress(json.value));
    },
    stream: {
      async write(data) {
        const json = serializeJson(data, "chunk", MAX_STREAM_CHUNK_BYTES);
        if (!json.ok) throw QueueError.from(json.error);
        guard();
        check(recorder.stream(json.value));
      },
    },
    sleep(name: string, ms: number): Promise<void> {
      if (!Number.isInteger(ms) || ms < 0 || ms > MAX_SNOOZE_MS) return Promise.reject(new QueueError("invalid_request", `sleep ${String(name)}: ms must be an integer of 0..${MAX_SNOOZE_MS}`));
      return sleepUntil(name, recorder.now() + ms);
    },
    sleepUntil: (name: string, epochMs: number) => sleepUntil(name, epochMs),
    waitpointId,
    waitFor(name: string, options: { timeoutMs?: number } = {}): Promise<WaitForOutcome> {
      try {
        const id = waitpointId(name);
        const timeoutMs = options?.timeoutMs;
        if (timeoutMs !== undefined && (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_WAITPOINT_TIMEOUT_MS)) {
          throw new QueueError("invalid_request", `waitFor ${name}: timeoutMs must be an integer of 1..${MAX_WAITPOINT_TIMEOUT_MS}`);
        }
        // An earlier attempt waited and its job heard: this one passes through with what it heard.
        const heard = recorder.dependencies().find((d) => "waitpoint" in d && d.waitpoint === id && d.lane === recorder.lane && d.outcome !== null);
        if (heard) return Promise.resolve(heard.outcome === "completed" ? { outcome: "completed", result: heard.result } : { outcome: "timedOut" });
        guard();
        return Promise.reject(recorder.wait(id, timeoutMs));
      } catch (error) {
        return Promise.reject(error);
      }
    },
  };

  /** The waitpoint of an in-process wait: `<job id>.<name>`, which must be a waitpoint id. */
  function waitpointId(name: string): string {
    return waitpointIdOf(recorder.jobId, name);
  }

  /**
   * A sleep recorded as the checkpoint `name`, `{"wakeAt": epoch ms}`: the first time it is recorded,
   * then the attempt ends in a snooze until then; an attempt past that instant passes at once. A sleep
   * longer than a snooze may be wakes once a year and sleeps on.
   */
  function sleepUntil(name: string, epochMs: number): Promise<void> {
    try {
      checkName(name);
      if (typeof epochMs !== "number" || !Number.isInteger(epochMs) || epochMs < 0 || epochMs > MAX_DURATION_MS) {
        throw new QueueError("invalid_request", `sleep ${name}: the instant must be an integer of 0..${MAX_DURATION_MS} epoch ms`);
      }
      const earlier = loaded().get(name);
      let wakeAt = epochMs;
      if (earlier !== undefined) {
        const value = JSON.parse(earlier) as { wakeAt?: unknown } | null;
        if (value === null || typeof value !== "object" || typeof value.wakeAt !== "number") throw new QueueError("invalid_request", `checkpoint ${name} is not a sleep's`);
        wakeAt = value.wakeAt;
      }
      if (recorder.now() >= wakeAt) return Promise.resolve();
      guard();
      const saved = earlier === undefined ? save(name, { wakeAt }) : null;
      return Promise.resolve(saved).then(() => {
        throw recorder.snooze(wakeAt);
      });
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
