/**
 * A job's dependencies (the jobs it waits for, each with its state now, read from its own lane) and
 * its dependents (the jobs registered to wait for it), each a link to its job view. Read again with
 * the job (`version`).
 */
import { useEffect, useState } from "hono/jsx/dom";
import { useAlive } from "./alive.js";
import { describe, jobPath, type Api } from "./api.js";
import { Alert, Section, StateBadge } from "./components.js";
import { href } from "./router.js";
import type { DependsOnItem, Job, JobRef } from "./types.js";

/** A dependency as read: its job, or gone (`missing`), or not readable with this token (`hidden`). */
type Seen = JobRef & { job: Job | null; missing: boolean; hidden?: boolean };

export function Dependencies({ api, job, version }: { api: Api; job: Job; version: number }) {
  const [deps, setDeps] = useState<Seen[]>([]);
  const [dependents, setDependents] = useState<JobRef[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const alive = useAlive();
  // Its waitpoints are shown with their states apart (waits.tsx).
  const refs = (job.dependsOn ?? []).filter((item: DependsOnItem): item is JobRef => "id" in item);

  useEffect(() => {
    void (async () => {
      try {
        const seen = await Promise.all(
          refs.map(async (ref): Promise<Seen> => {
            // A dependency in a lane the token does not read is named, not fetched (docs/api.md "Access").
            if (!api.can("GET", "/v1/lanes/{lane}/jobs/{id}", ref.lane)) return { ...ref, job: null, missing: false, hidden: true };
            try {
              return { ...ref, job: await api.get<Job>(jobPath(ref.lane, ref.id)), missing: false };
            } catch {
              return { ...ref, job: null, missing: true };
            }
          }),
        );
        const readsDependents = api.can("GET", "/v1/lanes/{lane}/jobs/{id}/dependents", job.lane);
        const listed = readsDependents ? await api.get<{ dependents: JobRef[] }>(`${jobPath(job.lane, job.id)}/dependents`) : { dependents: [] };
        if (!alive.current) return;
        setDeps(seen);
        setDependents(listed.dependents);
        setProblem(null);
      } catch (error) {
        if (alive.current) setProblem(`Could not read the job's dependents: ${describe(error)}`);
      }
    })();
  }, [api, job.lane, job.id, version]);

  if (refs.length === 0 && (dependents === null || dependents.length === 0) && problem === null) return null;
  return (
    <div class="columns">
      {refs.length > 0 && (
        <Section title={`Depends on (${refs.length}, ${job.state === "blocked" ? "waiting" : "done waiting"})`}>
          <table class="grid" data-testid="dependencies">
            <tbody>
              {deps.map((d) => (
                <tr key={`${d.lane}/${d.id}`} data-dependency={`${d.lane}/${d.id}`}>
                  <td>
                    <a href={href({ view: "job", lane: d.lane, id: d.id })}>
                      {d.lane === job.lane ? d.id : `${d.lane} / ${d.id}`}
                    </a>
                  </td>
                  <td>{d.job ? <StateBadge state={d.job.state} outcome={d.job.outcome} /> : <span class="muted">{d.hidden ? "not readable with this token" : d.missing ? "gone" : "…"}</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
      )}
      {dependents !== null && dependents.length > 0 && (
        <Section title={`Dependents (${dependents.length})`}>
          <ul class="refs" data-testid="dependents">
            {dependents.map((d) => (
              <li key={`${d.lane}/${d.id}`} data-dependent={`${d.lane}/${d.id}`}>
                <a href={href({ view: "job", lane: d.lane, id: d.id })}>{d.lane === job.lane ? d.id : `${d.lane} / ${d.id}`}</a>
              </li>
            ))}
          </ul>
        </Section>
      )}
      <Alert message={problem} />
    </div>
  );
}
