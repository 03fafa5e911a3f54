/**
 * What a lane answers its producers (enqueue/enqueue.ts writes): the bodies of lane.ts's `enqueue`,
 * `enqueueText`, `enqueueGroup` and `enqueueBatch`.
 *
 * The enqueue path flushes in its own write (enqueue/enqueue.ts): it knows whether the job's kind
 * runs in process (then the flush looks for jobs to start), and a job started at once re-arms for
 * its lease alone. `enqueue`, `enqueueText` and `enqueueGroup` answer in their own turn when they
 * can, so they ask for the schema's refusal themselves rather than pass the gate.
 */
import type { BatchAnswer, EnqueueAnswer } from "../../shared/answers.js";
import { ok, type Result } from "../../shared/errors.js";
import * as S from "../../shared/schemas.js";
import type { Enqueue } from "../enqueue/enqueue.js";
import { enqueueAnswer, enqueueAnswerText, type EnqueueDone } from "../enqueue/enqueue-text.js";
import { parse, parseBatchEnqueue, parseJsonText } from "../input.js";
import type { PayloadStore } from "../payloads/payload-store.js";
import { wholeDone } from "../payloads/whole-answers.js";
import type { JobStore } from "../store/job-store.js";
import { answerRegistered, type LaneRegistrar } from "./registered-answers.js";

/** The parts an enqueue reaches. */
export interface EnqueueParts {
  readonly enqueue: Enqueue;
  readonly payloads: PayloadStore;
  readonly store: JobStore;
}

/** The lane's refusal of a newer schema and its registration with the registry (lane-lifecycle.ts). */
export interface EnqueueLife extends LaneRegistrar {
  refusal<T>(): Result<T> | null;
}

export class EnqueueRpc {
  constructor(
    private readonly parts: EnqueueParts,
    private readonly life: EnqueueLife,
  ) {}

  /** Enqueues one job (idempotent by id). */
  async enqueue(input: unknown): Promise<Result<EnqueueAnswer>> {
    const done = await wholeDone(this.parts.payloads, this.life.refusal<never>() ?? (await this.parts.enqueue.one(input)));
    if (!done.ok) return done;
    await this.life.register();
    return ok(enqueueAnswer(done.value, this.parts.store.lane));
  }

  /**
   * `enqueue` in JSON text both ways, for the RPC client (enqueue-text.ts: a new job is answered by its
   * id and creation time, the client builds the rest). Answers in its own turn once the lane is registered.
   */
  enqueueText(request: string): string | Promise<string> {
    const input = parseJsonText(request);
    const done = this.life.refusal<never>() ?? (input.ok ? this.parts.enqueue.one(input.value) : input);
    const answer = (done: Result<EnqueueDone>): string | Promise<string> => {
      const whole = wholeDone(this.parts.payloads, done); // a stored job held in R2 (a duplicate): read back
      if (whole instanceof Promise) return whole.then(answer);
      return answerRegistered(this.life, done.ok, enqueueAnswerText(done, this.parts.store.lane));
    };
    return done instanceof Promise ? done.then(answer) : answer(done);
  }

  /**
   * Group commit (client/group-commit.ts): the single enqueues of many callers, each in JSON text as
   * `enqueueText` takes it, written in one transaction (one durable commit) and answered each as its
   * own `enqueueText` would have answered it: one caller's refusal or conflict is its own. A job with
   * dependencies registers with other lanes first, so it goes on its own after the others.
   */
  enqueueGroup(requests: unknown): Result<string[]> | Promise<Result<string[]>> {
    const refused = this.life.refusal<string[]>();
    if (refused) return refused;
    const texts = parse(S.EnqueueGroup, requests);
    if (!texts.ok) return texts;
    const lane = this.parts.store.lane;
    const inputs = texts.value.map((text) => parseJsonText(text));
    const written = this.parts.enqueue.group(inputs.map((input) => (input.ok ? input.value : undefined)));
    // A stored job held in R2 (a duplicate) is read back: such a caller is answered after the group, as
    // one with dependencies (written alone, `done` null) is.
    const readBack = new Map<number, Promise<Result<EnqueueDone>>>();
    const answers: (string | null)[] = written.map((done, i) => {
      if (!inputs[i]!.ok) return JSON.stringify(inputs[i]);
      if (done === null) return null;
      const whole = wholeDone(this.parts.payloads, done);
      if (!(whole instanceof Promise)) return enqueueAnswerText(done, lane);
      readBack.set(i, whole);
      return null;
    });
    const finish = () => answerRegistered(this.life, true, ok(answers as string[]));
    const later = answers.flatMap((a, i) => (a === null ? [i] : []));
    if (later.length === 0) return finish();
    return (async () => {
      for (const i of later) {
        const done = readBack.get(i) ?? wholeDone(this.parts.payloads, await this.parts.enqueue.groupAlone((inputs[i] as { value: unknown }).value));
        answers[i] = enqueueAnswerText(await done, lane);
      }
      return finish();
    })();
  }

  /** Enqueues 1..1000 jobs in one transaction, all or nothing: the body of a change that flushes in it (the enqueue path's write). */
  async enqueueBatch(input: unknown): Promise<Result<BatchAnswer>> {
    const request = parseBatchEnqueue(input);
    if (!request.ok) return request;
    const inserted = await this.parts.enqueue.batch(request.value.jobs, request.value.traceparent, request.value.shards);
    if (!inserted.ok) return inserted;
    await this.life.register();
    return ok({ results: inserted.value });
  }
}
