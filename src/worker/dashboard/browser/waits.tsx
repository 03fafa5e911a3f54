/**
 * The waitpoints a job waits on (docs/api.md "Waitpoints"), each with its state now: its `dependsOn`
 * items `{lane, waitpoint}` (read from their own lanes), then the waits its in-process attempts made
 * (`ctx.waitFor(name)` waits on `<job id>.<name>` in the job's lane: listed by that prefix). The job's
 * answer names no other wait an attempt made (a pull consumer's `POST …/wait` may name any
 * waitpoint): those are in a claimed job's `dependencies` only. Read again with the job (`version`:
 * a settlement that releases it is one of its transitions) and, while one is pending, every few
 * seconds (a settlement that does not release it, another still pending, is not).
 */
import { useEffect, useState } from "hono/jsx/dom";
import { useAlive } from "./alive.js";
import { lanePath, waitpointPath, type Api } from "./api.js";
import { Json, Section, When } from "./components.js";
import { useCoalescedReload } from "./reload.js";
import { useEvery } from "./single-effect.js";
import { ownWaits } from "./own-waits.js";
import type { DependsOnItem, Job, Waitpoint, WaitpointRef } from "./types.js";

const PENDING_EVERY_MS = 2_000;
/** How many of a job's in-process waits are shown (a job makes a handful). */
const ATTEMPT_WAITS_SHOWN = 50;

/**
 * A waitpoint as read: itself, or gone (`missing`: swept, or never made), or not readable with this
 * token; `from`: a `dependsOn` item, or an in-process wait of an attempt.
 */
type Seen = WaitpointRef & { read: Waitpoint | null; missing: boolean; hidden: boolean; from: "dependsOn" | "attempt" };

export const isWaitpointRef = (item: DependsOnItem): item is WaitpointRef => "waitpoint" in item;

export function WaitpointBadge({ state }: { state: string }) {
  return <span class={`badge badge-wp-${state}`}>{state}</span>;
}

export function Waits({ api, job, version }: { api: Api; job: Job; version: number }) {
  const refs = (job.dependsOn ?? []).filter(isWaitpointRef);
  const [seen, setSeen] = useState<Seen[]>([]);
  const alive = useAlive();

  const reload = useCoalescedReload(async () => {
    const named = Promise.all(
      refs.map(async (ref): Promise<Seen> => {
        const item = { ...ref, from: "dependsOn" as const };
        if (!api.can("GET", "/v1/lanes/{lane}/waitpoints/{id}", ref.lane)) return { ...item, read: null, missing: false, hidden: true };
        try {
          return { ...item, read: (await api.get<{ waitpoint: Waitpoint }>(waitpointPath(ref.lane, ref.waitpoint))).waitpoint, missing: false, hidden: false };
        } catch {
          return { ...item, read: null, missing: true, hidden: false };
        }
      }),
    );
    const attempts = (async (): Promise<Seen[]> => {
      if (!api.can("GET", "/v1/lanes/{lane}/waitpoints", job.lane)) return [];
      const query = new URLSearchParams({ prefix: `${job.id}.`, limit: String(ATTEMPT_WAITS_SHOWN) });
      try {
        const page = await api.get<{ waitpoints: Waitpoint[] }>(`${lanePath(job.lane)}/waitpoints?${query}`);
        return ownWaits(job.id, page.waitpoints).map((w) => ({ lane: job.lane, waitpoint: w.id, read: w, missing: false, hidden: false, from: "attempt" as const }));
      } catch {
        return []; // an id too long for a prefix, or a lane that refuses: its dependsOn items still show
      }
    })();
    const [fromDependsOn, fromAttempts] = await Promise.all([named, attempts]);
    const listed = new Set(fromDependsOn.map((s) => `${s.lane}/${s.waitpoint}`));
    if (alive.current) setSeen([...fromDependsOn, ...fromAttempts.filter((s) => !listed.has(`${s.lane}/${s.waitpoint}`))]);
  }, PENDING_EVERY_MS);
  useEffect(() => reload.now(), [api, job.lane, job.id, version]);
  const anyPending = seen.some((s) => s.read?.state === "pending");
  useEvery(PENDING_EVERY_MS, () => reload.soon(), [], anyPending);

  if (seen.length === 0) return null;
  return (
    <Section title={`Waits on (${seen.length} waitpoint${seen.length === 1 ? "" : "s"})`}>
      <table class="grid" data-testid="waits">
        <thead>
          <tr>
            <th>Waitpoint</th>
            <th>From</th>
            <th>State</th>
            <th>Times out</th>
            <th>Settled</th>
            <th class="num">Waiters</th>
            <th>Result</th>
          </tr>
        </thead>
        <tbody>
          {seen.map((s) => (
            <tr key={`${s.lane}/${s.waitpoint}`} data-waitpoint={`${s.lane}/${s.waitpoint}`} data-from={s.from} data-state={s.read?.state ?? (s.missing ? "missing" : "hidden")}>
              <td class="id">{s.lane === job.lane ? s.waitpoint : `${s.lane} / ${s.waitpoint}`}</td>
              <td class="muted" title={s.from === "attempt" ? "an in-process wait of an attempt (ctx.waitFor)" : "an item of the job's dependsOn"}>
                {s.from === "attempt" ? "attempt" : "dependsOn"}
              </td>
              {s.read ? (
                <>
                  <td>
                    <WaitpointBadge state={s.read.state} />
                  </td>
                  <td class="nowrap">
                    <When ms={s.read.timeoutAt} />
                  </td>
                  <td class="nowrap">
                    <When ms={s.read.settledAt} />
                  </td>
                  <td class="num">{String(s.read.waiters)}</td>
                  <td class="value">{s.read.state === "completed" ? <Json value={s.read.result} /> : <span class="muted">—</span>}</td>
                </>
              ) : (
                <td colSpan={5} class="muted">
                  {s.hidden ? "not readable with this token" : "gone (swept, or no longer kept)"}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </Section>
  );
}
