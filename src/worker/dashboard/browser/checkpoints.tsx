/**
 * A job's checkpoints (docs/api.md "Checkpoints"), in name order: the value each holds, the generation of
 * the attempt that wrote it, and when. Read again each time the job view reads the job (`version`),
 * so they follow a running job; a completed job has none (its completion deletes them).
 */
import { useEffect, useState } from "hono/jsx/dom";
import { useAlive } from "./alive.js";
import { describe, jobPath, type Api } from "./api.js";
import { Alert, Json, Section, When } from "./components.js";
import { useCoalescedReload } from "./reload.js";
import type { Checkpoint } from "./types.js";

const RELOAD_EVERY_MS = 1_000;

export function Checkpoints({ api, lane, id, version }: { api: Api; lane: string; id: string; version: number }) {
  const [checkpoints, setCheckpoints] = useState<Checkpoint[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const alive = useAlive();

  const reload = useCoalescedReload(async () => {
    try {
      const fresh = await api.get<{ checkpoints: Checkpoint[] }>(`${jobPath(lane, id)}/checkpoints`);
      if (!alive.current) return;
      setCheckpoints(fresh.checkpoints);
      setProblem(null);
    } catch (error) {
      if (alive.current) setProblem(`Could not read the checkpoints: ${describe(error)}`);
    }
  }, RELOAD_EVERY_MS);
  useEffect(() => reload.now(), [api, lane, id, version]);

  return (
    <Section title="Checkpoints">
      <Alert message={problem} />
      {checkpoints === null ? (
        <p class="muted">Loading…</p>
      ) : checkpoints.length === 0 ? (
        <p class="muted">None recorded (an attempt records them with ctx.step or a checkpoint PUT; a completion deletes them).</p>
      ) : (
        <table class="grid" data-testid="checkpoints">
          <thead>
            <tr>
              <th>Name</th>
              <th class="num">Generation</th>
              <th>Updated</th>
              <th>Value</th>
            </tr>
          </thead>
          <tbody>
            {checkpoints.map((c) => (
              <tr key={c.name} data-checkpoint={c.name}>
                <td class="id">{c.name}</td>
                <td class="num" data-testid="generation">
                  {String(c.generation)}
                </td>
                <td class="nowrap">
                  <When ms={c.updatedAt} />
                </td>
                <td class="value">
                  <Json value={c.value} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  );
}
