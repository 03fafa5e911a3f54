/** GET /dashboard: the page and its assets, without auth, from this worker only, under a strict CSP. */
import { describe, expect, it } from "vitest";
import { get } from "../helpers/http.js";

async function page() {
  const answer = await get("/dashboard", { token: null });
  expect(answer.status).toBe(200);
  return answer;
}

const assetPaths = (html: string) => [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);

describe("GET /dashboard", () => {
  it("serves the page without a token", async () => {
    const answer = await page();
    expect(answer.headers.get("content-type")).toMatch(/^text\/html/);
    expect(answer.body).toContain('<div id="app">');
  });

  it("forbids inline script and style, other origins and framing", async () => {
    const csp = (await page()).headers.get("content-security-policy")!;
    const directives = new Map(csp.split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name!, values]));
    expect(directives.get("default-src")).toEqual(["'none'"]);
    expect(directives.get("script-src")).toEqual(["'self'"]);
    expect(directives.get("style-src")).toEqual(["'self'"]);
    expect(directives.get("connect-src")).toEqual(["'self'"]);
    expect(directives.get("frame-ancestors")).toEqual(["'none'"]);
    expect(csp).not.toMatch(/unsafe-|\*|https?:/);
  });

  it("has no inline script, and loads everything from this worker", async () => {
    const html = (await page()).body as string;
    for (const [, attributes, body] of html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)) {
      expect(attributes).toMatch(/ src="\/dashboard\//);
      expect(body).toBe("");
    }
    const paths = assetPaths(html);
    expect(paths.length).toBe(3);
    for (const path of paths) expect(path).toMatch(/^\/dashboard\/(app|icon)-[0-9a-f]{16}\.(js|css|svg)$/);
  });

  it("serves its script and style with their types, for good (their names change with their content)", async () => {
    for (const path of assetPaths((await page()).body)) {
      const asset = await get(path, { token: null });
      expect(asset.status, path).toBe(200);
      expect(asset.headers.get("content-type")).toMatch(path.endsWith(".js") ? /^text\/javascript/ : path.endsWith(".css") ? /^text\/css/ : /^image\/svg\+xml/);
      expect(asset.headers.get("cache-control")).toContain("immutable");
      expect(asset.headers.get("x-content-type-options")).toBe("nosniff");
      expect(String(asset.body).length).toBeGreaterThan(100);
    }
  });

  it("answers 404 for an asset it does not have", async () => {
    const answer = await get("/dashboard/app-0000000000000000.js", { token: null });
    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe("not_found");
  });

  it("puts no token in the page", async () => {
    const html = (await page()).body as string;
    expect(html).not.toContain("test-token");
    expect(html).not.toContain("rotated-in-token");
  });
});
