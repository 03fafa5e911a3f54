/**
 * The pull consumers' RPC methods' bodies (the claim and the fenced writes, held claims, batch acks):
 * lane.ts delegates here.
 */
import * as S from "../../shared/schemas.js";
import type { AcksAnswer } from "../../shared/answers.js";
import { DEFAULT_LEASE_MS, MAX_PROGRESS_BYTES } from "../../shared/defaults.js";
import { ok, type Result } from "../../shared/errors.js";
import type { Job, Lease, PulledJob } from "../../shared/job.js";
import { serializeJson } from "../../shared/json.js";
import { applyAcks } from "./acks.js";
import type { ClaimAsk } from "./claim.js";
import { HoldName, parse, parseJobCall } from "../input.js";
import type { LaneWiring } from "../wiring.js";

export class FenceCalls {
  constructor(private readonly rooms: LaneWiring) {}

  async claim(input?: unknown, hold?: unknown): Promise<Result<{ jobs: PulledJob[] }>> {
    const request = parse(S.ClaimRequest, input ?? {});
    if (!request.ok) return request;
    const name = hold === undefined ? ok(null) : parse(HoldName, hold);
    if (!name.ok) return name;
    const ask: ClaimAsk = { kinds: request.value.kinds ?? null, max: request.value.max ?? 1, leaseMs: request.value.leaseMs ?? DEFAULT_LEASE_MS };
    const jobs = this.rooms.claims.forConsumer(ask, this.rooms.dispatcher);
    if (jobs.length > 0) this.rooms.wake.afterChange();
    const waitMs = request.value.waitMs ?? 0;
    if (jobs.length > 0 || waitMs === 0) return ok({ jobs });
    const held = this.rooms.waiters.hold(ask, waitMs, name.value);
    // A claim held while a bucket is empty waits for its next token, a term of the wake.
    if (held && this.rooms.store.settings.read().rateLimit !== null) this.rooms.wake.afterChange(false);
    return ok({ jobs: held ? await held : [] });
  }

  renew(id: unknown, input: unknown): Result<{ lease: Lease }> {
    const call = parseJobCall(id, S.RenewRequest, input);
    if (!call.ok) return call;
    const { token, leaseMs, progress } = call.value.request;
    const progressJson = progress === undefined ? ok(null) : serializeJson(progress, "progress", MAX_PROGRESS_BYTES);
    if (!progressJson.ok) return progressJson;
    const lease = this.rooms.fenced.renew(call.value.id, token, leaseMs ?? DEFAULT_LEASE_MS, progressJson.value);
    this.rooms.wake.afterChange();
    return lease.ok ? ok({ lease: lease.value }) : lease;
  }

  complete(id: unknown, input: unknown): Result<{ job: Job }> {
    const call = parseJobCall(id, S.CompleteRequest, input);
    if (!call.ok) return call;
    const result = serializeJson(call.value.request.result, "result");
    if (!result.ok) return result;
    return this.rooms.jobChanged(this.rooms.fenced.complete(call.value.id, call.value.request.token, result.value));
  }

  fail(id: unknown, input: unknown): Result<{ job: Job }> {
    const call = parseJobCall(id, S.FailRequest, input);
    if (!call.ok) return call;
    const { token, error, retry, retryAfterMs } = call.value.request;
    return this.rooms.jobChanged(this.rooms.fenced.fail(call.value.id, token, error, retry !== false, retryAfterMs ?? null));
  }

  snooze(id: unknown, input: unknown): Result<{ job: Job }> {
    const call = parseJobCall(id, S.SnoozeRequest, input);
    if (!call.ok) return call;
    return this.rooms.jobChanged(this.rooms.fenced.snooze(call.value.id, call.value.request.token, call.value.request.delayMs));
  }

  release(id: unknown, input: unknown): Result<{ job: Job }> {
    const call = parseJobCall(id, S.ReleaseRequest, input);
    if (!call.ok) return call;
    return this.rooms.jobChanged(this.rooms.fenced.release(call.value.id, call.value.request.token));
  }

  abandonClaim(hold: unknown): Result<{ released: number }> {
    const name = parse(HoldName, hold);
    if (!name.ok) return name;
    const released = this.rooms.waiters.abandon(name.value);
    if (released > 0) this.rooms.wake.afterChange();
    return ok({ released });
  }

  acks(input: unknown): Result<AcksAnswer> {
    const request = parse(S.AcksRequest, input);
    if (!request.ok) return request;
    const results = applyAcks(request.value.acks, {
      complete: (id, token, json) => this.rooms.fenced.complete(id, token, json),
      // A pull consumer may have recorded checkpoints: the batch deletes them with the completion.
      completeBatch: (items) => this.rooms.fenced.completeBatch(items.map((item) => ({ ...item, checkpoints: true }))),
      fail: (id, token, message, retry, after) => this.rooms.fenced.fail(id, token, message, retry, after),
      release: (id, token) => this.rooms.fenced.release(id, token),
      snooze: (id, token, delayMs) => this.rooms.fenced.snooze(id, token, delayMs),
      progress: (id, token, json) => this.rooms.checkpoints.progress(id, token, json),
    });
    this.rooms.wake.afterChange();
    return results.ok ? ok({ results: results.value }) : results;
  }
}
