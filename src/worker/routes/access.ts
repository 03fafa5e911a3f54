/**
 * `GET /v1/access` (docs/api.md "Access"): what the calling token may do — its role, its lanes and
 * the routes its role allows, read from the one table in access.ts — so that a client (the dashboard)
 * can offer only what the server would accept. Every role may call it.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { ACCESS_RULES, ROLES, type Role } from "../access.js";
import { bearerAuth, createRouter, errorResponses, jsonResponse } from "../openapi.js";

const AccessResponse = z
  .object({
    role: z.enum(ROLES),
    lanes: z.array(z.string()).nullable().openapi({ description: "the lane names and prefixes (ending in *) the token reaches; null: every lane" }),
    allows: z.array(z.string()).openapi({ description: 'the routes the role may call, as "METHOD /v1/path/{param}"', example: ["POST /v1/lanes/{lane}/jobs"] }),
  })
  .openapi("AccessResponse");

const getAccess = createRoute({
  method: "get",
  path: "/access",
  tags: ["access"],
  summary: "What the calling token may do: its role, lanes and allowed routes",
  security: bearerAuth,
  responses: { 200: jsonResponse(AccessResponse, "the token's access"), ...errorResponses() },
});

/** The routes `role` may call, as `METHOD /path` (an admin: every route of the table). */
export function allowedRoutes(role: Role): string[] {
  return ACCESS_RULES.filter((rule) => role === "admin" || (rule.roles as readonly Role[]).includes(role)).map((rule) => `${rule.method} ${rule.path}`);
}

export function accessRoutes() {
  return createRouter().openapi(getAccess, (c) => {
    const { role, lanes } = c.get("principal");
    return c.json({ role, lanes: lanes === null ? null : [...lanes], allows: allowedRoutes(role) }, 200);
  });
}
