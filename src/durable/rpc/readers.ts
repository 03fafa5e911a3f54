/**
 * What a lane answers its readers (a job, a page of jobs, the per-minute history): the bodies of
 * lane.ts's methods.
 */
import * as S from "../../shared/schemas.js";
import type { JobPage } from "../../shared/answers.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import type { Job } from "../../shared/job.js";
import { DEFAULT_HISTORY_WINDOW_MS, HistoryRequest, type HistoryAnswer } from "../../shared/history.js";
import { parse, parseId } from "../input.js";
import type { History } from "../history/history.js";
import type { PayloadSource, PayloadStore } from "../payloads/payload-store.js";
import { decodeCursor, encodeCursor } from "../store/cursor.js";
import type { JobStore } from "../store/job-store.js";

/** The parts readers' calls reach. */
export interface ReaderParts {
  readonly store: JobStore;
  readonly history: History;
  readonly payloads: PayloadStore;
}

export class ReaderRpc {
  constructor(private readonly parts: ReaderParts) {}

  getJob(id: unknown): Result<Job> {
    const name = parseId(id);
    if (!name.ok) return name;
    const job = this.parts.store.getJob(name.value);
    return job ? ok(job) : fail("job_not_found", `no job ${name.value} in lane ${this.parts.store.lane}`);
  }

  /**
   * Where a job's payload or result is, for the routes that stream it: its JSON text, or the key of
   * its object in `PAYLOADS` (docs/api.md "Big payloads"), which the front worker reads itself.
   */
  jobValue(id: unknown, which: unknown): Result<PayloadSource> {
    const name = parseId(id);
    if (!name.ok) return name;
    if (which !== "payload" && which !== "result") return fail("invalid_request", "which is payload or result");
    const source = this.parts.payloads.sourceOfJob(name.value, which);
    return source ? ok(source) : fail("job_not_found", `no job ${name.value} in lane ${this.parts.store.lane}`);
  }

  listJobs(input: unknown): Result<JobPage> {
    const query = parse(S.ListQuery, input ?? {});
    if (!query.ok) return query;
    let afterSeq = 0;
    if (query.value.cursor !== undefined) {
      const seq = decodeCursor(query.value.cursor);
      if (seq === null) return fail("invalid_request", "cursor is not one this API gave", [{ path: ["cursor"], message: "unknown cursor" }]);
      afterSeq = seq;
    }
    const { jobs, lastSeq, more } = this.parts.store.listJobs({ ...query.value, afterSeq });
    return ok({ jobs, cursor: more && lastSeq !== null ? encodeCursor(lastSeq) : null });
  }

  history(input?: unknown): Result<HistoryAnswer> {
    const request = parse(HistoryRequest, input ?? {});
    if (!request.ok) return request;
    return ok({ buckets: this.parts.history.read(request.value.windowMs ?? DEFAULT_HISTORY_WINDOW_MS) });
  }
}
