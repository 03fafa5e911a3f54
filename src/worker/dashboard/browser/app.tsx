/**
 * The page: asks for the API token once (kept in sessionStorage for this tab only), checks it against
 * the server, then shows the view the URL's hash names. A refused token brings the question back with
 * the reason, never a blank page.
 */
import { useEffect, useMemo, useState } from "hono/jsx/dom";
import { useAlive } from "./alive.js";
import { Api, ApiError, fetchAccess, type Access } from "./api.js";
import { Alert } from "./components.js";
import { EnqueueForm } from "./enqueue-form.js";
import { JobView } from "./job-view.js";
import { LaneView } from "./lane-view.js";
import { LanesView } from "./lanes-view.js";
import { href, useRoute } from "./router.js";
import { forgetToken, loadToken, saveToken } from "./token.js";

export function App() {
  const [token, setToken] = useState(loadToken);
  // What the token may do (GET /v1/access): the page offers only that.
  const [access, setAccess] = useState<Access | null>(null);
  const [refusal, setRefusal] = useState<string | null>(null);
  const refuse = (error: unknown) => {
    forgetToken();
    setToken(null);
    setAccess(null);
    setRefusal(explainRefusal(error));
  };
  const api = useMemo(() => (token === null || access === null ? null : new Api(token, access, refuse)), [token, access]);
  // A token kept from earlier in this tab session: ask again what it may do.
  useEffect(() => {
    if (token !== null && access === null) fetchAccess(token).then(setAccess, refuse);
  }, [token, access]);
  const route = useRoute();
  if (token === null) {
    return (
      <TokenForm
        refusal={refusal}
        onAccepted={(accepted, granted) => {
          saveToken(accepted);
          setRefusal(null);
          setAccess(granted);
          setToken(accepted);
        }}
      />
    );
  }
  if (api === null) return <main class="login"><p class="muted">Checking the token…</p></main>;
  const forget = () => {
    forgetToken();
    setRefusal(null);
    setAccess(null);
    setToken(null);
  };
  const lister = api.can("GET", "/v1/lanes");
  const producer = api.can("POST", "/v1/lanes/{lane}/jobs");
  return (
    <div class="page">
      <header class="top">
        <a class="brand" href={href({ view: "lanes" })}>
          Switchyard
        </a>
        <nav>
          {lister && (
            <a href={href({ view: "lanes" })} class={route.view === "lanes" ? "current" : ""}>
              Lanes
            </a>
          )}
          {producer && (
            <a href={href({ view: "enqueue", lane: "lane" in route ? route.lane : null })} class={route.view === "enqueue" ? "current" : ""}>
              Enqueue
            </a>
          )}
        </nav>
        <span class="muted" data-testid="role" title={api.access.lanes === null ? "every lane" : `lanes: ${api.access.lanes.join(", ")}`}>
          {api.access.role}
          {api.access.lanes === null ? "" : ` · ${api.access.lanes.join(", ")}`}
        </span>
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

function TokenForm({ refusal, onAccepted }: { refusal: string | null; onAccepted: (token: string, access: Access) => void }) {
  const [problem, setProblem] = useState<string | null>(refusal);
  const [checking, setChecking] = useState(false);
  const alive = useAlive();
  const submit = async (event: Event) => {
    event.preventDefault();
    const input = (event.target as HTMLFormElement).elements.namedItem("token") as HTMLInputElement;
    const token = input.value.trim();
    if (token === "") return setProblem("Enter the API token: one of the tokens in the worker's API_TOKEN or API_KEYS secret.");
    setChecking(true);
    try {
      // Asking what the token may do proves it, whatever its role; nothing is stored until it does.
      onAccepted(token, await fetchAccess(token));
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
    if (error.status === 401) return "The server refused this token (401 unauthorized). Use one of the tokens listed in the worker's API_TOKEN or API_KEYS secret.";
    if (error.code === "auth_not_configured") return "The server has no usable token configuration (API_TOKEN unset, or API_KEYS unreadable: its log says why), so it refuses every request.";
    if (error.status === 0) return "The server could not be reached. Is the worker running?";
    return `The server answered ${error.status} ${error.code}: ${error.message}`;
  }
  return String(error);
}
