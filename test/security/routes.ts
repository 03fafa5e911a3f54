/**
 * The routes of the OpenAPI document, for suites that must cover every one of them (auth rotation,
 * hostile input): method, path template, query parameters and request body schema as the API declares.
 */
import { expect } from "vitest";
import { get } from "../helpers/http.js";

export interface Route {
  method: string;
  /** e.g. `/v1/lanes/{lane}/jobs/{id}/complete` */
  template: string;
  query: string[];
  /** The `$ref`'d or inline JSON schema of the body; undefined: the route takes none. */
  body?: { required: boolean; schema: JsonSchema };
}

export type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
};

interface Document {
  paths: Record<string, Record<string, {
    parameters?: { name: string; in: string }[];
    requestBody?: { required?: boolean; content: Record<string, { schema: JsonSchema }> };
  }>>;
  components: { schemas: Record<string, JsonSchema> };
}

/** Every `/v1` route of GET /openapi.json, and the document's schemas (to resolve `$ref`s). */
export async function v1Routes(): Promise<{ routes: Route[]; schemas: Record<string, JsonSchema> }> {
  const answer = await get("/openapi.json", { token: null });
  expect(answer.status).toBe(200);
  const doc = answer.body as Document;
  const routes = Object.entries(doc.paths)
    .filter(([path]) => path.startsWith("/v1/"))
    .flatMap(([template, methods]) =>
      Object.entries(methods).map(([method, op]): Route => {
        const body = op.requestBody?.content["application/json"];
        return {
          method: method.toUpperCase(),
          template,
          query: (op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name),
          ...(body ? { body: { required: op.requestBody!.required === true, schema: body.schema } } : {}),
        };
      }),
    );
  expect(routes.length).toBeGreaterThanOrEqual(15);
  return { routes, schemas: doc.components.schemas };
}

/** The template with its path parameters filled in (each value sent as is: no encoding); a name other than the lane's takes `id`. */
export function fill(template: string, params: { lane: string; id: string }): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => (name === "lane" ? params.lane : params.id));
}

/** Whether the template names something besides its lane (a job, a queue, …). */
export function hasInnerName(template: string): boolean {
  return /\{(?!lane\})\w+\}/.test(template);
}
