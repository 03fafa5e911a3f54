/** A lane's settings and maintenance: pause or resume, concurrency, retention (when the server has it), sweep. */
import { useAction } from "./action.js";
import { useAlive } from "./alive.js";
import { lanePath, type Api } from "./api.js";
import { Alert, Notice } from "./components.js";
import { duration } from "./format.js";
import { rateText } from "./queue-panel.js";
import type { LaneInfo } from "./types.js";

const HOUR_MS = 3_600_000;

export function LaneControls({ api, info, onChanged }: { api: Api; info: LaneInfo; onChanged: (info: LaneInfo) => void }) {
  const { busy, problem, notice, run } = useAction();
  const path = lanePath(info.lane);
  const alive = useAlive();
  // Lane settings and sweeps are an admin's (docs/api.md "Access"): others see the settings only.
  const admin = api.can("PATCH", "/v1/lanes/{lane}", info.lane);
  const sweeper = api.can("POST", "/v1/lanes/{lane}/sweep", info.lane);

  const configure = (patch: Record<string, unknown>, said: string) =>
    run(async () => {
      const fresh = await api.patch<LaneInfo>(path, patch);
      if (alive.current) onChanged(fresh);
      return said;
    });

  const setConcurrency = (event: Event) => {
    event.preventDefault();
    const value = Number(field(event, "concurrency"));
    void configure({ concurrency: value }, `Concurrency set to ${value}.`);
  };
  const setRetention = (event: Event) => {
    event.preventDefault();
    const hours = (name: string) => {
      const text = field(event, name).trim();
      return text === "" ? null : Math.round(Number(text) * HOUR_MS);
    };
    void configure({ retention: { completedMs: hours("completedHours"), failedMs: hours("failedHours") } }, "Retention set.");
  };
  const sweep = (event: Event) => {
    event.preventDefault();
    const hours = Number(field(event, "olderThanHours"));
    const settledBefore = Date.now() - Math.round(hours * HOUR_MS);
    if (!confirm(`Delete every settled job of lane ${info.lane} settled more than ${duration(hours * HOUR_MS)} ago? This cannot be undone.`)) return;
    void run(async () => {
      const { removed } = await api.post<{ removed: number }>(`${path}/sweep`, { settledBefore });
      return `Swept ${removed} settled job${removed === 1 ? "" : "s"}.`;
    });
  };

  return (
    <div class="controls" data-testid="controls">
      <div class="control">
        <span class={info.paused ? "badge badge-paused" : "badge badge-running"} data-testid="paused">
          {info.paused ? "paused" : "dispatching"}
        </span>
        {admin && (
          <button type="button" disabled={busy} onClick={() => void configure({ paused: !info.paused }, info.paused ? "Resumed." : "Paused: nothing new starts.")}>
            {info.paused ? "Resume" : "Pause"}
          </button>
        )}
      </div>
      <div class="control" data-testid="flow">
        <span>
          Rate limit <strong data-testid="lane-rate-limit">{rateText(info.rateLimit ?? null)}</strong>
        </span>
        <span>
          Fairness <strong data-testid="lane-fairness">{info.fairness ?? "fifo"}</strong>
        </span>
      </div>
      {!admin && (
        <div class="control">
          <span>
            Concurrency <strong data-testid="lane-concurrency">{String(info.concurrency)}</strong>
          </span>
        </div>
      )}
      {admin && (
      <form class="control" onSubmit={setConcurrency}>
        <label>
          Concurrency <input name="concurrency" type="number" min="1" max="1000" required value={String(info.concurrency)} />
        </label>
        <button type="submit" disabled={busy}>
          Set
        </button>
      </form>
      )}
      {admin && info.retention && (
        <form class="control" onSubmit={setRetention}>
          <label>
            Keep completed (h) <input name="completedHours" type="number" min="0" step="any" placeholder="forever" value={hoursOf(info.retention.completedMs)} />
          </label>
          <label>
            Keep failed (h) <input name="failedHours" type="number" min="0" step="any" placeholder="forever" value={hoursOf(info.retention.failedMs)} />
          </label>
          <button type="submit" disabled={busy}>
            Set retention
          </button>
        </form>
      )}
      {sweeper && (
      <form class="control" onSubmit={sweep}>
        <label>
          Sweep settled jobs older than (h) <input name="olderThanHours" type="number" min="0" step="any" required value="24" />
        </label>
        <button type="submit" class="danger" disabled={busy}>
          Sweep…
        </button>
      </form>
      )}
      <Alert message={problem} />
      <Notice message={notice} />
    </div>
  );
}

function field(event: Event, name: string): string {
  return ((event.target as HTMLFormElement).elements.namedItem(name) as HTMLInputElement).value;
}

function hoursOf(ms: number | null): string {
  return ms === null ? "" : String(ms / HOUR_MS);
}
