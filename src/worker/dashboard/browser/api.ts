/** The dashboard's one way to the server: the `/v1` routes with the bearer token; refusals as `ApiError`. */
import { reachesLane } from "../../../shared/lane-patterns.js";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

/** What the token may do (`GET /v1/access`): its role, lanes (null: every lane) and allowed routes. */
export interface Access {
  role: string;
  lanes: string[] | null;
  allows: string[];
}

export class Api {
  private readonly allows: Set<string>;

  constructor(
    readonly token: string,
    /** What the server says the token may do; the page offers nothing else. */
    readonly access: Access,
    /** Called when the server refuses the token (401): the page asks for it again. */
    private readonly onUnauthorized: (error: ApiError) => void = () => {},
  ) {
    this.allows = new Set(access.allows);
  }

  /** Whether the token may call `method` on the route `template` (`/v1/lanes/{lane}/…`), on `lane` when given. */
  can(method: string, template: string, lane?: string): boolean {
    if (!this.allows.has(`${method} ${template}`)) return false;
    return lane === undefined || reachesLane(this.access.lanes, lane);
  }

  get<T>(path: string): Promise<T> {
    return this.request("GET", path);
  }

  post<T>(path: string, body: unknown = {}): Promise<T> {
    return this.request("POST", path, body);
  }

  patch<T>(path: string, body: unknown): Promise<T> {
    return this.request("PATCH", path, body);
  }

  put<T>(path: string, body: unknown): Promise<T> {
    return this.request("PUT", path, body);
  }

  delete<T>(path: string): Promise<T> {
    return this.request("DELETE", path);
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(path, {
        method,
        headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch {
      throw new ApiError(0, "network", "the server could not be reached");
    }
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: described below by its status
    }
    if (response.ok) return parsed as T;
    const error = (parsed as { error?: { code?: unknown; message?: unknown; details?: unknown } } | null)?.error;
    const failure = new ApiError(
      response.status,
      typeof error?.code === "string" ? error.code : `http_${response.status}`,
      typeof error?.message === "string" ? error.message : `HTTP ${response.status} ${response.statusText}`,
      error?.details,
    );
    if (response.status === 401) this.onUnauthorized(failure);
    throw failure;
  }
}

/** Asks the server what `token` may do; refuses as any call does (401 for a wrong token). */
export function fetchAccess(token: string): Promise<Access> {
  return new Api(token, { role: "", lanes: null, allows: [] }).get<Access>("/v1/access");
}

export const lanePath = (lane: string): string => `/v1/lanes/${encodeURIComponent(lane)}`;
export const jobPath = (lane: string, id: string): string => `${lanePath(lane)}/jobs/${encodeURIComponent(id)}`;
export const waitpointPath = (lane: string, id: string): string => `${lanePath(lane)}/waitpoints/${encodeURIComponent(id)}`;

/** What to tell the operator about a failed call. */
export function describe(error: unknown): string {
  if (error instanceof ApiError) return error.status === 0 ? error.message : `${error.message} (${error.status} ${error.code})`;
  return error instanceof Error ? error.message : String(error);
}
