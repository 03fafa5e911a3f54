/** A form to enqueue one job, for trying things out: the request of docs/api.md "Enqueue", field by field. */
import { useState } from "hono/jsx/dom";
import { useAlive } from "./alive.js";
import { describe, lanePath, type Api } from "./api.js";
import { Alert, Section } from "./components.js";
import { href } from "./router.js";
import type { Job } from "./types.js";

const DEMO_KINDS = ["demo.echo", "demo.sleep", "demo.fail", "demo.steps"];

export function EnqueueForm({ api, lane }: { api: Api; lane: string | null }) {
  const [problem, setProblem] = useState<string | null>(null);
  const [done, setDone] = useState<{ status: string; job: Job } | null>(null);
  const [busy, setBusy] = useState(false);
  const alive = useAlive();

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const value = (name: string) => (form.elements.namedItem(name) as HTMLInputElement | HTMLTextAreaElement).value.trim();
    setProblem(null);
    setDone(null);
    let payload: unknown;
    try {
      payload = JSON.parse(value("payload") || "null");
    } catch {
      return setProblem("The payload is not valid JSON.");
    }
    const request: Record<string, unknown> = { kind: value("kind"), payload };
    for (const name of ["id", "queue"]) if (value(name) !== "") request[name] = value(name);
    for (const name of ["priority", "delayMs", "maxAttempts"]) if (value(name) !== "") request[name] = Number(value(name));
    setBusy(true);
    try {
      const answer = await api.post<{ status: string; job: Job }>(`${lanePath(value("lane"))}/jobs`, request);
      if (alive.current) setDone(answer);
    } catch (error) {
      if (alive.current) setProblem(describe(error));
    } finally {
      if (alive.current) setBusy(false);
    }
  };

  if (!api.can("POST", "/v1/lanes/{lane}/jobs")) {
    return (
      <Section title="Enqueue a job">
        <p class="muted">This {api.access.role} token cannot enqueue jobs.</p>
      </Section>
    );
  }
  return (
    <Section title="Enqueue a job">
      <form class="enqueue" onSubmit={submit} data-testid="enqueue">
        <label>
          Lane <input name="lane" required value={lane ?? ""} pattern="[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}" />
        </label>
        <label>
          Kind <input name="kind" required list="demo-kinds" placeholder="demo.echo" />
        </label>
        <datalist id="demo-kinds">
          {DEMO_KINDS.map((k) => (
            <option value={k} key={k} />
          ))}
        </datalist>
        <label class="wide">
          Payload (JSON) <textarea name="payload" rows={5}>{"{}"}</textarea>
        </label>
        <label>
          Id (optional) <input name="id" placeholder="generated" />
        </label>
        <label>
          Queue (optional) <input name="queue" placeholder="none" />
        </label>
        <label>
          Priority <input name="priority" type="number" placeholder="0" />
        </label>
        <label>
          Delay (ms) <input name="delayMs" type="number" min="0" placeholder="0" />
        </label>
        <label>
          Max attempts <input name="maxAttempts" type="number" min="1" max="100" placeholder="3" />
        </label>
        <button type="submit" disabled={busy}>
          Enqueue
        </button>
      </form>
      <Alert message={problem} />
      {done && (
        <p class="notice" role="status">
          {done.status === "duplicate" ? "Already there (a duplicate): " : "Enqueued: "}
          <a href={href({ view: "job", lane: done.job.lane, id: done.job.id })}>{done.job.id}</a>
        </p>
      )}
    </Section>
  );
}
