import { exports } from "cloudflare:workers";
import { expect, it } from "vitest";

/** A GET to the app's own default export, without a token: the page and its assets need none. */
const get = (path: string) => exports.default.fetch(`https://app.test${path}`);

// The dashboard's browser code is built into the package (dist/): the page served by the packed
// createApp() must find its script and style there, not in a source tree a user does not have.
it("serves GET /dashboard from the packed library, with its script and style", async () => {
  const page = await get("/dashboard");
  expect(page.status).toBe(200);
  expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
  const html = await page.text();
  const script = html.match(/<script src="(\/dashboard\/app-\w+\.js)"/)?.[1];
  const style = html.match(/<link rel="stylesheet" href="(\/dashboard\/app-\w+\.css)"/)?.[1];
  expect([script, style]).not.toContain(undefined);

  const js = await get(script!);
  expect(js.status).toBe(200);
  expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
  const code = await js.text();
  // The browser bundle itself (minified; it mints its events tickets at POST /v1/tickets).
  expect(code.length).toBeGreaterThan(10_000);
  expect(code).toContain("/v1/tickets");

  const css = await get(style!);
  expect(css.status).toBe(200);
  expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8");
  expect((await css.text()).length).toBeGreaterThan(100);
});
