/**
 * What a lane answers its pull consumers (the claim and the fenced writes, held claims, batch acks):
 * the bodies of lane.ts's methods, which declare each a change (rpc/gate.ts flushes after it).
 */
import * as S from "../../shared/schemas.js";
import type { AcksAnswer } from "../../shared/answers.js";
import { DEFAULT_LEASE_MS, MAX_PROGRESS_BYTES } from "../../shared/defaults.js";
import { ok, type ErrorBody, type Result } from "../../shared/errors.js";
import type { Job, Lease, PulledJob } from "../../shared/job.js";
import { serializeJson } from "../../shared/json.js";
import { isBig } from "../payloads/held.js";
import { applyAcks } from "../attempts/acks.js";
import type { ClaimAsk, Claims } from "../attempts/claim.js";
import type { Dispatcher } from "../attempts/dispatcher.js";
import type { FencedWrites } from "../attempts/fenced-writes.js";
import type { Waiters } from "../attempts/waiters.js";
import type { SwitchyardEnv } from "../env.js";
import { HoldName, parse, parseJobCall } from "../input.js";
import type { CheckpointStore } from "../steps/checkpoints.js";
import type { JobStore } from "../store/job-store.js";
import type { Wake } from "../wake/wake.js";
import type { WaitAnswer, Waits } from "../waits/waits.js";
import { checkAckCompletions, checkCompletion } from "../kinds/completions.js";
import type { KindChecks } from "../kinds/kind-checks.js";
import type { PayloadStore } from "../payloads/payload-store.js";
import { wholeJobs } from "../payloads/whole-answers.js";
import { askOf, claimCounter } from "../shards/claim-counts.js";
import { completeHeld, holdAckResults, type HeldAcks } from "../payloads/held-results.js";

/** The parts a pull consumer's calls reach. */
export interface PullConsumerParts {
  readonly claims: Claims;
  readonly dispatcher: Dispatcher<SwitchyardEnv>;
  readonly waiters: Waiters<PulledJob>;
  readonly fenced: FencedWrites;
  readonly checkpoints: CheckpointStore;
  readonly store: JobStore;
  /** The claim flushes itself: before a held claim waits (rpc/gate.ts `flush.inBody`). */
  readonly wake: Wake;
  /** An attempt's wait on a waitpoint (waits/waits.ts). */
  readonly waits: Waits;
  /** The declared kinds' result checks (kinds/kind-checks.ts). */
  readonly kinds: KindChecks;
  /** Big payloads and results in R2 (payloads/payload-store.ts). */
  readonly payloads: PayloadStore;
}

export class PullConsumerRpc {
  constructor(private readonly parts: PullConsumerParts) {}

  async claim(input?: unknown, hold?: unknown): Promise<Result<{ jobs: PulledJob[] }>> {
    const request = parse(S.ClaimRequest, input ?? {});
    if (!request.ok) return request;
    const name = hold === undefined ? ok(null) : parse(HoldName, hold);
    if (!name.ok) return name;
    if (this.parts.waiters.left(name.value)) return ok({ jobs: [] });
    const minJobs = S.heldMinJobs(request.value);
    const ask: ClaimAsk = { ...askOf(request.value), ...(minJobs > 1 ? { minJobs } : {}) };
    // With minJobs, it takes nothing until that many are claimable: until then it is held (waiters.ts).
    const gathering = minJobs > 1 && this.parts.claims.claimableCount(ask, this.parts.dispatcher, minJobs) < minJobs;
    const jobs = gathering ? [] : this.parts.claims.forConsumer(ask, this.parts.dispatcher);
    if (jobs.length > 0) this.parts.wake.afterChange();
    // Also without a wait: a sharded lane's held claim claims each shard so, under its hold's name.
    this.parts.waiters.tookAtOnce(name.value, jobs);
    const waitMs = request.value.waitMs ?? 0;
    if (jobs.length > 0 || waitMs === 0) return ok({ jobs: await this.whole(jobs, ask.max) });
    const held = this.parts.waiters.hold(ask, waitMs, name.value);
    // A claim held while a bucket is empty waits for its next token, a term of the wake.
    if (held && this.parts.store.settings.read().rateLimit !== null) this.parts.wake.afterChange(false);
    return ok({ jobs: held ? await this.whole(await held, ask.max) : [] });
  }

  /** A claim of one job answers it whole, read back from R2 when held there (payloads/whole-answers.ts); else as it is, in this turn. */
  private whole(jobs: PulledJob[], max: number): PulledJob[] | Promise<PulledJob[]> {
    return wholeJobs(this.parts.payloads, jobs, max);
  }

  /** How many jobs the claim `input` would take now, counted up to its `minJobs` (else its `max`); claims nothing. */
  claimable(input?: unknown): Result<{ claimable: number }> {
    const count = claimCounter(this.parts.claims, this.parts.dispatcher, input);
    return count.ok ? ok({ claimable: count.value.read() }) : count;
  }

  renew(id: unknown, input: unknown): Result<{ lease: Lease }> {
    const call = parseJobCall(id, S.RenewRequest, input);
    if (!call.ok) return call;
    const { token, leaseMs, progress } = call.value.request;
    const progressJson = progress === undefined ? ok(null) : serializeJson(progress, "progress", MAX_PROGRESS_BYTES);
    if (!progressJson.ok) return progressJson;
    const lease = this.parts.fenced.renew(call.value.id, token, leaseMs ?? DEFAULT_LEASE_MS, progressJson.value);
    return lease.ok ? ok({ lease: lease.value }) : lease;
  }

  complete(id: unknown, input: unknown): Result<{ job: Job }> | Promise<Result<{ job: Job }>> {
    const call = parseJobCall(id, S.CompleteRequest, input);
    if (!call.ok) return call;
    const { payloads } = this.parts;
    const result = serializeJson(call.value.request.result, "result", payloads.heldLimit);
    if (!result.ok) return result;
    const { id: jobId, request: { token } } = call.value;
    const complete = (json: string) => this.parts.fenced.complete(jobId, token, json);
    // Over 128 KiB, kept in R2: uploaded, then written through the fence (payloads/held-results.ts).
    const write = () => (isBig(result.value, payloads.heldLimit) ? completeHeld(payloads, jobId, result.value, complete).then(jobAnswer) : jobAnswer(complete(result.value)));
    // A result of a kind with a result schema is checked before the fence: a refusal keeps the lease (kinds/completions.ts).
    const refused = checkCompletion(this.parts.kinds, this.kindOf, call.value.id, call.value.request.result);
    if (refused instanceof Promise) return refused.then((r) => r ?? write());
    return refused ?? write();
  }

  /** A job's kind, for the check of its result (only a lane that declares a result schema reads it). */
  private readonly kindOf = (id: string) => this.parts.store.kindOf(id);

  fail(id: unknown, input: unknown): Result<{ job: Job }> {
    const call = parseJobCall(id, S.FailRequest, input);
    if (!call.ok) return call;
    const { token, error, retry, retryAfterMs } = call.value.request;
    return jobAnswer(this.parts.fenced.fail(call.value.id, token, error, retry !== false, retryAfterMs ?? null));
  }

  snooze(id: unknown, input: unknown): Result<{ job: Job }> {
    const call = parseJobCall(id, S.SnoozeRequest, input);
    if (!call.ok) return call;
    return jobAnswer(this.parts.fenced.snooze(call.value.id, call.value.request.token, call.value.request.delayMs));
  }

  waitOn(id: unknown, input: unknown): Result<WaitAnswer> | Promise<Result<WaitAnswer>> {
    const call = parseJobCall(id, S.WaitRequest, input);
    if (!call.ok) return call;
    const { token, waitpoint, timeoutMs } = call.value.request;
    return this.parts.waits.waitAnywhere(call.value.id, token, waitpoint, timeoutMs);
  }

  release(id: unknown, input: unknown): Result<{ job: Job }> {
    const call = parseJobCall(id, S.ReleaseRequest, input);
    if (!call.ok) return call;
    return jobAnswer(this.parts.fenced.release(call.value.id, call.value.request.token));
  }

  abandonClaim(hold: unknown): Result<{ released: number }> {
    const name = parse(HoldName, hold);
    if (!name.ok) return name;
    const released = this.parts.waiters.abandon(name.value);
    return ok({ released });
  }

  acks(input: unknown): Result<AcksAnswer> | Promise<Result<AcksAnswer>> {
    const request = parse(S.AcksRequest, input);
    if (!request.ok) return request;
    // Completions of a kind with a result schema are checked first: a refused one is its item's answer (kinds/completions.ts).
    const refused = checkAckCompletions(this.parts.kinds, this.kindOf, request.value.acks);
    if (refused instanceof Promise) return refused.then((r) => this.acksChecked(request.value.acks, r));
    return this.acksChecked(request.value.acks, refused);
  }

  private acksChecked(acks: S.AcksRequest["acks"], refused: ReadonlyMap<number, ErrorBody> | null, uploaded?: HeldAcks): Result<AcksAnswer> | Promise<Result<AcksAnswer>> {
    // Results over 128 KiB go to R2 first, then the acks apply with their references (payloads/held-results.ts).
    const holding = uploaded ? null : holdAckResults(this.parts.payloads, acks, refused);
    if (holding) {
      return holding.then((done) => {
        const answer = this.acksChecked(acks, done.refused, done);
        // A registration with another shard that fails never reaches the writes: its uploads are settled all the same.
        return answer instanceof Promise ? answer.catch((error: unknown) => { this.parts.payloads.landed(done.keys); throw error; }) : answer;
      });
    }
    const { waits } = this.parts;
    // Waits on waitpoints of other shards register with them first (waits/waits.ts `registered`).
    const away = acks.flatMap((a) => (a.op === "wait" && waits.elsewhere(a.waitpoint) ? [a] : []));
    if (away.length > 0) return waits.registered(away).then((registered) => registered.run((wait) => this.applied(acks, wait, refused, uploaded)));
    return this.applied(acks, (id, token, waitpoint, timeoutMs) => waits.wait(id, token, waitpoint, timeoutMs), refused, uploaded);
  }

  private applied(acks: S.AcksRequest["acks"], wait: Waits["wait"], refused: ReadonlyMap<number, ErrorBody> | null, uploaded?: HeldAcks): Result<AcksAnswer> {
    const results = this.withLanded(uploaded, () => applyAcks(acks, {
      complete: (id, token, json) => this.parts.fenced.complete(id, token, json),
      // A pull consumer may have recorded checkpoints: the batch deletes them with the completion.
      completeBatch: (items) => this.parts.fenced.completeBatch(items.map((item) => ({ ...item, checkpoints: true }))),
      fail: (id, token, message, retry, after) => this.parts.fenced.fail(id, token, message, retry, after),
      release: (id, token) => this.parts.fenced.release(id, token),
      snooze: (id, token, delayMs) => this.parts.fenced.snooze(id, token, delayMs),
      wait,
      progress: (id, token, json) => this.parts.checkpoints.progress(id, token, json),
    }, refused, uploaded?.held ?? null));
    return results.ok ? ok({ results: results.value }) : results;
  }

  /** Runs the acks' writes, then settles their uploads in the same turn: kept by the jobs that now point at them, else owed a deletion. */
  private withLanded<T>(uploaded: HeldAcks | undefined, write: () => T): T {
    try {
      return write();
    } finally {
      if (uploaded) this.parts.payloads.landed(uploaded.keys);
    }
  }
}

/** A fenced write's answer about one job, as its RPC method answers it. */
export function jobAnswer(answer: Result<Job>): Result<{ job: Job }> {
  return answer.ok ? ok({ job: answer.value }) : answer;
}
