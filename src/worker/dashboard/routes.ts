/**
 * `GET /dashboard` (docs/api.md "Dashboard"): the operator's page, served without auth. The page holds no
 * data: it asks for the API token and does everything through `/v1`. Its script and style come from
 * this worker (no CDN), built from ./browser by scripts/build-dashboard.ts, under a strict
 * Content-Security-Policy: no inline script or style, no other origin, no framing.
 */
import { Hono } from "hono";
import type { AppEnv } from "../openapi.js";
import { DASHBOARD_SCRIPT, DASHBOARD_STYLE, DASHBOARD_VERSION } from "./browser-bundle.js";

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  // 'self' covers the events sockets (ws: and wss: of this host) as well as fetch.
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

const SCRIPT_PATH = `/dashboard/app-${DASHBOARD_VERSION}.js`;
const STYLE_PATH = `/dashboard/app-${DASHBOARD_VERSION}.css`;
const ICON_PATH = `/dashboard/icon-${DASHBOARD_VERSION}.svg`;
/** Two rails and their sleepers. */
const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#2458d6"/><path d="M5 2v12M11 2v12M3 5h10M3 8h10M3 11h10" stroke="#fff" stroke-width="1.5"/></svg>`;

const SHELL = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchyard</title>
<link rel="icon" href="${ICON_PATH}">
<link rel="stylesheet" href="${STYLE_PATH}">
<script src="${SCRIPT_PATH}" defer></script>
</head>
<body><div id="app"><noscript>The Switchyard dashboard needs JavaScript.</noscript></div></body>
</html>
`;

const ASSETS: Record<string, { body: string; type: string } | undefined> = {
  [SCRIPT_PATH]: { body: DASHBOARD_SCRIPT, type: "text/javascript; charset=utf-8" },
  [STYLE_PATH]: { body: DASHBOARD_STYLE, type: "text/css; charset=utf-8" },
  [ICON_PATH]: { body: ICON, type: "image/svg+xml" },
};

/** Versioned URLs never change content, so browsers may keep them for good. */
const IMMUTABLE = "public, max-age=31536000, immutable";

export function dashboardRoutes() {
  const page = (): Response =>
    new Response(SHELL, { headers: { ...SECURITY_HEADERS, "content-type": "text/html; charset=utf-8", "cache-control": "no-cache" } });
  return new Hono<AppEnv>()
    .get("/dashboard", page)
    .get("/dashboard/", page)
    .get("/dashboard/:asset", (c, next) => {
      const asset = ASSETS[`/dashboard/${c.req.param("asset")}`];
      if (!asset) return next(); // the app's 404
      return new Response(asset.body, { headers: { ...SECURITY_HEADERS, "content-type": asset.type, "cache-control": IMMUTABLE } });
    });
}
