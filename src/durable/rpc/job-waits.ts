/**
 * What a lane answers callers that wait for a job (docs/api.md "Results", `?waitMs`): the body of
 * lane.ts's `awaitJob`, a read (it changes nothing, so no flush follows it).
 */
import { z } from "zod";
import { MAX_JOB_WAIT_MS } from "../../shared/defaults.js";
import { fail, ok, type Result } from "../../shared/errors.js";
import type { HeldJob } from "../../routing/job-waits.js";
import type { TransitionLog } from "../events/transitions.js";
import { parseId } from "../input.js";
import { HeldReads } from "../results/held-reads.js";
import type { JobStore } from "../store/job-store.js";
import { toIssues } from "../../shared/schemas.js";

const WaitMs = z.number().int().min(0).max(MAX_JOB_WAIT_MS);

/** The parts a held read reaches. */
export interface JobWaitParts {
  readonly store: JobStore;
  readonly transitions: TransitionLog;
}

export class JobWaitRpc {
  readonly held: HeldReads;

  constructor(private readonly parts: JobWaitParts) {
    this.held = new HeldReads({ read: (id) => parts.store.getJob(id), listen: (listener) => parts.transitions.listen(listener) });
  }

  awaitJob(id: unknown, waitMs: unknown): Result<HeldJob> | Promise<Result<HeldJob>> {
    const name = parseId(id);
    if (!name.ok) return name;
    const ms = WaitMs.safeParse(waitMs);
    if (!ms.success) return fail("invalid_request", `waitMs must be an integer 0..${MAX_JOB_WAIT_MS}`, toIssues(ms.error, ["waitMs"]));
    const job = this.parts.store.getJob(name.value);
    if (job === null) return this.notFound(name.value);
    if (job.state === "settled" || ms.data === 0) return ok({ job, busy: false });
    const held = this.held.hold(name.value, ms.data);
    if (held === null) return ok({ job, busy: true });
    return held.then((now) => (now === null ? this.notFound(name.value) : ok({ job: now, busy: false })));
  }

  private notFound(id: string): Result<never> {
    return fail("job_not_found", `no job ${id} in lane ${this.parts.store.lane}`);
  }
}
