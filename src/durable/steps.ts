/**
 * Durable steps for in-process executors (API.md "Checkpoints"): `ctx.step`, `ctx.checkpoints` and
 * `ctx.progress` over one attempt. The job's checkpoints are read once, on first use, so an attempt
 * that records none costs its claim nothing; every write goes through the fence with the attempt's
 * current token (the dispatcher's recorder holds it).
 */
import { MAX_CHECKPOINT_BYTES, MAX_PROGRESS_BYTES } from "../shared/defaults.js";
import { QueueError, type ErrorBody, type Result } from "../shared/errors.js";
import type { Json } from "../shared/job.js";
import { serializeJson } from "../shared/json.js";
import type { ExecutorContext } from "./executors.js";
import { parseName } from "./rpc-input.js";

/** What the steps of one attempt need of the dispatcher. */
export interface AttemptRecorder {
  /** The job's checkpoints up to the attempt's generation, name → JSON text. */
  recorded(): Map<string, string>;
  /** A fenced checkpoint write with the attempt's current token. */
  save(name: string, valueJson: string): Result<unknown>;
  /** A fenced progress write with the attempt's current token. */
  progress(progressJson: string): Result<unknown>;
  /** Why the attempt's writes are refused before they are tried (it was aborted, or its executor returned); null while it runs. */
  over(): Error | null;
  /** A write was refused: the error to reject with (a refusal of the fence aborts the attempt first). */
  refused(error: ErrorBody): Error;
}

export type DurableSteps = Pick<ExecutorContext, "step" | "checkpoints" | "progress">;

export function durableSteps(recorder: AttemptRecorder): DurableSteps {
  let recorded: Map<string, string> | null = null;
  const loaded = () => (recorded ??= recorder.recorded());

  /** Writes through the recorder, or throws what the attempt's executor should see. */
  const write = (attempt: () => Result<unknown>): void => {
    const over = recorder.over();
    if (over) throw over;
    const written = attempt();
    if (!written.ok) throw recorder.refused(written.error);
  };

  const checkName = (name: string): void => {
    const checked = parseName(name, "checkpoint");
    if (!checked.ok) throw QueueError.from(checked.error);
  };

  const save = (name: string, value: unknown): string => {
    checkName(name);
    const json = serializeJson(value, `checkpoint ${name}`, MAX_CHECKPOINT_BYTES);
    if (!json.ok) throw QueueError.from(json.error);
    write(() => recorder.save(name, json.value));
    recorded?.set(name, json.value);
    return json.value;
  };

  return {
    async step<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
      checkName(name);
      const earlier = loaded().get(name);
      if (earlier !== undefined) return JSON.parse(earlier) as T;
      const value = await fn();
      return JSON.parse(save(name, value)) as T;
    },
    checkpoints: {
      async load() {
        const values: Record<string, Json> = {};
        for (const [name, json] of loaded()) values[name] = JSON.parse(json) as Json;
        return values;
      },
      async save(name, value) {
        save(name, value);
      },
    },
    async progress(value) {
      const json = serializeJson(value, "progress", MAX_PROGRESS_BYTES);
      if (!json.ok) throw QueueError.from(json.error);
      write(() => recorder.progress(json.value));
    },
  };
}
