/**
 * The page: asks for the API token once (kept in sessionStorage for this tab only), checks it against
 * the server, then shows the view the URL's hash names. A refused token brings the question back with
 * the reason, never a blank page.
 */
import { useMemo, useState } from "hono/jsx/dom";
import { useAlive } from "./alive.js";
import { Api, ApiError } from "./api.js";
import { Alert } from "./components.js";
import { EnqueueForm } from "./enqueue-form.js";
import { JobView } from "./job-view.js";
import { LaneView } from "./lane-view.js";
import { LanesView } from "./lanes-view.js";
import { href, useRoute } from "./router.js";
import { forgetToken, loadToken, saveToken } from "./token.js";

export function App() {
  const [token, setToken] = useState(loadToken);
  const [refusal, setRefusal] = useState<string | null>(null);
  const api = useMemo(
    () =>
      token === null
        ? null
        : new Api(token, (error) => {
            forgetToken();
            setToken(null);
            setRefusal(explainRefusal(error));
          }),
    [token],
  );
  const route = useRoute();
  if (api === null) {
    return (
      <TokenForm
        refusal={refusal}
        onAccepted={(accepted) => {
          saveToken(accepted);
          setRefusal(null);
          setToken(accepted);
        }}
      />
    );
  }
  const forget = () => {
    forgetToken();
    setRefusal(null);
    setToken(null);
  };
  return (
    <div class="page">
      <header class="top">
        <a class="brand" href={href({ view: "lanes" })}>
          Switchyard
        </a>
        <nav>
          <a href={href({ view: "lanes" })} class={route.view === "lanes" ? "current" : ""}>
            Lanes
          </a>
          <a href={href({ view: "enqueue", lane: "lane" in route ? route.lane : null })} class={route.view === "enqueue" ? "current" : ""}>
            Enqueue
          </a>
        </nav>
        <button type="button" class="quiet" onClick={forget}>
          Forget token
        </button>
      </header>
      <main>
        {route.view === "lanes" && <LanesView api={api} />}
        {route.view === "lane" && <LaneView api={api} lane={route.lane} key={route.lane} />}
        {route.view === "job" && <JobView api={api} lane={route.lane} id={route.id} key={`${route.lane}/${route.id}`} />}
        {route.view === "enqueue" && <EnqueueForm api={api} lane={route.lane} />}
      </main>
    </div>
  );
}

function TokenForm({ refusal, onAccepted }: { refusal: string | null; onAccepted: (token: string) => void }) {
  const [problem, setProblem] = useState<string | null>(refusal);
  const [checking, setChecking] = useState(false);
  const alive = useAlive();
  const submit = async (event: Event) => {
    event.preventDefault();
    const input = (event.target as HTMLFormElement).elements.namedItem("token") as HTMLInputElement;
    const token = input.value.trim();
    if (token === "") return setProblem("Enter the API token: one of the tokens in the worker's API_TOKEN secret.");
    setChecking(true);
    try {
      // Any authenticated read proves the token; nothing is stored until it does.
      await new Api(token).get("/v1/lanes?limit=1");
      onAccepted(token);
    } catch (error) {
      if (!alive.current) return;
      setProblem(explainRefusal(error));
      setChecking(false);
    }
  };
  return (
    <main class="login">
      <form class="panel" onSubmit={submit} data-testid="token-form">
        <h1>Switchyard</h1>
        <p>
          Enter the API token. It is kept in this tab's session storage only, and sent to this server alone, as a bearer token.
        </p>
        <label>
          API token
          <input name="token" type="password" autocomplete="off" required autofocus />
        </label>
        <Alert message={problem} />
        <button type="submit" disabled={checking}>
          {checking ? "Checking…" : "Open the dashboard"}
        </button>
      </form>
    </main>
  );
}

function explainRefusal(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 401) return "The server refused this token (401 unauthorized). Use one of the tokens listed in the worker's API_TOKEN secret.";
    if (error.code === "auth_not_configured") return "The server has no API token configured (API_TOKEN is unset), so it refuses every request until one is set.";
    if (error.status === 0) return "The server could not be reached. Is the worker running?";
    return `The server answered ${error.status} ${error.code}: ${error.message}`;
  }
  return String(error);
}
