import { OpenAPIHono } from "@hono/zod-openapi";

/** The front worker's Hono app (placeholder until the routes land). */
export function createApp() {
  const app = new OpenAPIHono<{ Bindings: Env }>();
  app.get("/healthz", (c) => c.json({ ok: true }));
  return app;
}
