/**
 * What a lane answers about durable steps (checkpoints and progress: steps/checkpoints.ts): the
 * bodies of lane.ts's methods.
 */
import * as S from "../../shared/schemas.js";
import { MAX_CHECKPOINT_BYTES, MAX_PROGRESS_BYTES } from "../../shared/defaults.js";
import { ok, type Result } from "../../shared/errors.js";
import type { Checkpoint, CheckpointInfo, Job } from "../../shared/job.js";
import { serializeJson } from "../../shared/json.js";
import { parseId, parseJobCall, parseName } from "../input.js";
import type { StreamReaders } from "../results/stream-readers.js";
import type { CheckpointStore } from "../steps/checkpoints.js";

/** The parts steps' calls reach. */
export interface StepParts {
  readonly checkpoints: CheckpointStore;
  readonly streamReaders: StreamReaders;
}

export class StepRpc {
  constructor(private readonly parts: StepParts) {}

  saveCheckpoint(id: unknown, name: unknown, input: unknown): Result<{ checkpoint: CheckpointInfo }> {
    const call = parseJobCall(id, S.CheckpointRequest, input);
    if (!call.ok) return call;
    const checkpoint = parseName(name, "checkpoint");
    if (!checkpoint.ok) return checkpoint;
    const value = serializeJson(call.value.request.value, "value", MAX_CHECKPOINT_BYTES);
    if (!value.ok) return value;
    const saved = this.parts.checkpoints.save(call.value.id, call.value.request.token, checkpoint.value, value.value);
    return saved.ok ? ok({ checkpoint: saved.value }) : saved;
  }

  listCheckpoints(id: unknown): Result<{ checkpoints: Checkpoint[] }> {
    const name = parseId(id);
    if (!name.ok) return name;
    const listed = this.parts.checkpoints.list(name.value);
    return listed.ok ? ok({ checkpoints: listed.value }) : listed;
  }

  /** Records the job's progress, then tells held stream readers of its event (a success calls for no flush). */
  progress(id: unknown, input: unknown): Result<{ job: Job }> {
    const answer = this.recordProgress(id, input);
    this.parts.streamReaders.poke();
    return answer;
  }

  private recordProgress(id: unknown, input: unknown): Result<{ job: Job }> {
    const call = parseJobCall(id, S.ProgressRequest, input);
    if (!call.ok) return call;
    const progress = serializeJson(call.value.request.progress, "progress", MAX_PROGRESS_BYTES);
    if (!progress.ok) return progress;
    const recorded = this.parts.checkpoints.progress(call.value.id, call.value.request.token, progress.value);
    return recorded.ok ? ok({ job: recorded.value }) : recorded;
  }
}
