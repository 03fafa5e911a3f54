/** Views live in the URL's hash (`#/lanes/x/jobs/y`), so every view can be bookmarked and reloaded. */
import { useState } from "hono/jsx/dom";
import { useSingleEffect } from "./single-effect.js";

export type Route =
  | { view: "lanes" }
  | { view: "lane"; lane: string }
  | { view: "job"; lane: string; id: string }
  | { view: "enqueue"; lane: string | null };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter((p) => p !== "").map(decode);
  if (parts[0] === "lanes" && parts[1] !== undefined) {
    if (parts[2] === "jobs" && parts[3] !== undefined) return { view: "job", lane: parts[1], id: parts[3] };
    return { view: "lane", lane: parts[1] };
  }
  if (parts[0] === "enqueue") return { view: "enqueue", lane: parts[1] ?? null };
  return { view: "lanes" };
}

export function href(route: Route): string {
  const e = encodeURIComponent;
  switch (route.view) {
    case "lanes":
      return "#/";
    case "lane":
      return `#/lanes/${e(route.lane)}`;
    case "job":
      return `#/lanes/${e(route.lane)}/jobs/${e(route.id)}`;
    case "enqueue":
      return route.lane === null ? "#/enqueue" : `#/enqueue/${e(route.lane)}`;
  }
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  // One listener: a second, its cleanup lost, would hear every change again and never be removed.
  useSingleEffect(() => {
    const changed = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return route;
}

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
