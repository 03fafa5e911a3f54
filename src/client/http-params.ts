/**
 * The HTTP client's path parameters. hono's client puts a param into its route's path as it is, so
 * an id holding `/`, `?` or `#` would reach another route (`../jobs/victim/cancel?` as a waitpoint
 * id cancels job victim): each one is sent encoded, one segment whatever it holds (the worker decodes
 * it back). An empty one would drop its segment and `.` or `..` is resolved away by the URL itself,
 * encoded or not; no name is any of them, so they are refused before anything is sent.
 */
import { QueueError } from "../shared/errors.js";

/** `value` as one path segment, or `invalid_request` if no segment can carry it. */
export function segment(value: string, what = "id"): string {
  if (typeof value !== "string" || value === "" || value === "." || value === "..") {
    throw new QueueError("invalid_request", `${what} ${JSON.stringify(value)} is not a valid name`, [{ path: [what], message: "not a valid name" }]);
  }
  return encodeURIComponent(value);
}

/** `methods` with each one's synchronous throw (a refused param) answered as its promise's rejection. */
export function rejectingThrows<T extends object>(methods: T): T {
  const out: Record<string, unknown> = {};
  for (const [key, method] of Object.entries(methods)) {
    out[key] =
      typeof method === "function"
        ? (...args: unknown[]) => {
            try {
              return method(...args);
            } catch (error) {
              return Promise.reject(error);
            }
          }
        : method;
  }
  return out as T;
}
