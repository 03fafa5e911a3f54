/**
 * Token rotation over every /v1 route of the OpenAPI document (auth.test.ts covers missing and wrong
 * tokens, and a token that was never listed): a token rotated out of API_TOKEN is refused everywhere
 * the moment it leaves the list, while its successor, and both during the overlap, get through.
 */
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/worker/app.js";
import { expectError, read, request } from "../helpers/http.js";
import { fill, v1Routes } from "./routes.js";

const OLD = "old-token-7f3a";
const NEW = "new-token-c41d";

/** Sends one request of each route with `token` while API_TOKEN is `apiToken`; answers the statuses. */
async function everyRoute(apiToken: string, token: string) {
  const app = createApp();
  const { routes } = await v1Routes();
  const lane = crypto.randomUUID();
  const answers = [];
  for (const route of routes) {
    const path = fill(route.template, { lane, id: "job-1" });
    const response = await app.fetch(request(route.method, path, { token, json: {} }), { ...env, API_TOKEN: apiToken }, createExecutionContext());
    answers.push({ route: `${route.method} ${route.template}`, answer: await read(response) });
  }
  return answers;
}

describe("rotation over every /v1 route", () => {
  it("before: the old token gets through", async () => {
    for (const { route, answer } of await everyRoute(OLD, OLD)) expect([401, 503], route).not.toContain(answer.status);
  });

  it("during the overlap: both get through, in either order of the list", async () => {
    for (const apiToken of [`${OLD},${NEW}`, `${NEW}, ${OLD}`]) {
      for (const token of [OLD, NEW]) {
        for (const { route, answer } of await everyRoute(apiToken, token)) expect([401, 503], `${route} ${token}`).not.toContain(answer.status);
      }
    }
  });

  it("after: the rotated-out token is refused with 401 on every route, the new one gets through", async () => {
    for (const { route, answer } of await everyRoute(NEW, OLD)) {
      expect(answer.status, route).toBe(401);
      expectError(answer, 401, "unauthorized");
    }
    for (const { route, answer } of await everyRoute(NEW, NEW)) expect([401, 503], route).not.toContain(answer.status);
  });

  it("after: a rotated-out token that shares a prefix, a suffix, a case or a header with the new one is refused", async () => {
    for (const token of [`${NEW}-old`, NEW.slice(0, -1), NEW.toUpperCase(), `${NEW}x`, `${NEW} ${OLD}`]) {
      for (const { route, answer } of await everyRoute(NEW, token)) expect(answer.status, `${route} ${JSON.stringify(token)}`).toBe(401);
    }
  });
});
