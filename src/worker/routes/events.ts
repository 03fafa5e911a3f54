/**
 * Live events (docs/api.md "Live events"): `POST /v1/tickets` mints a ticket under bearer auth, and
 * `GET /v1/lanes/{lane}/events?ticket=…` checks it and hands the WebSocket upgrade to the lane, which
 * accepts the socket itself. The events route carries no bearer token (a browser cannot set one on a
 * WebSocket), so the app's bearer middleware skips it: `EVENTS_PATH`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { QueueError, type ErrorBody } from "../../shared/errors.js";
import { Name } from "../../shared/schemas.js";
import { accessConfig, reachesLane } from "../access.js";
import { laneOf } from "../lane-call.js";
import { MAX_SHARDS, shardObjectName } from "../../shared/shards.js";
import { bearerAuth, createRouter, errorResponses, jsonRequest, jsonResponse } from "../openapi.js";
import { checkTicket, issueTicket, TICKET_TTL_MS, type TicketCheck } from "../tickets.js";

/** The events route, in Hono's path syntax under `/v1`, for the bearer middleware to skip. */
export const EVENTS_PATH = "/v1/lanes/:lane/events";

const TicketRequest = z
  .strictObject({ lane: Name.optional().openapi({ description: "the one lane the ticket opens; absent: every lane" }) })
  .openapi("TicketRequest");

const TicketResponse = z
  .object({
    ticket: z.string().openapi({ description: "pass as `?ticket=` to the events route; opens any number of sockets until it expires" }),
    expiresAt: z.number().int().openapi({ description: `epoch ms; ${TICKET_TTL_MS} ms after minting` }),
  })
  .openapi("TicketResponse");

const mintTicket = createRoute({
  method: "post",
  path: "/tickets",
  tags: ["events"],
  summary: "Mint a short-lived ticket for the events socket of one lane, or of every lane",
  security: bearerAuth,
  request: { body: jsonRequest(TicketRequest, false) },
  responses: { 200: jsonResponse(TicketResponse, "the ticket"), ...errorResponses(415) },
});

const REFUSALS: Record<Exclude<TicketCheck, "ok">, string> = {
  malformed: "the ticket is not one this API minted",
  bad_signature: "the ticket is not one this API minted",
  expired: "the ticket has expired: mint a new one with POST /v1/tickets",
  wrong_lane: "the ticket is for another lane",
};

export function eventRoutes() {
  return (
    createRouter()
      .openapi(mintTicket, async (c) => {
        const { lane } = c.req.valid("json") ?? {};
        // A ticket reaches what its issuer does: a scoped token's ticket for every lane opens only its lanes.
        const principal = c.get("principal");
        if (lane !== undefined && !reachesLane(principal.lanes, lane)) throw new QueueError("forbidden", "this token does not reach this lane");
        return c.json(await issueTicket([principal.token], lane ?? null, Date.now(), principal.lanes), 200);
      })
      // Not in the OpenAPI document: it answers 101 and then speaks WebSocket, which OpenAPI cannot describe.
      .get("/lanes/:lane/events", async (c) => {
        const config = accessConfig(c.env);
        if (!config.ok) throw new QueueError("auth_not_configured", config.reason);
        const tokens = config.principals.map((p) => p.token);
        const lane = c.req.param("lane");
        const ticket = c.req.query("ticket");
        if (ticket === undefined || ticket === "") throw new QueueError("unauthorized", "the events route needs a ?ticket= from POST /v1/tickets");
        const check = await checkTicket(ticket, tokens, lane, Date.now());
        if (check !== "ok") throw new QueueError("unauthorized", REFUSALS[check]);
        if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
          throw new QueueError("upgrade_required", "the events route speaks WebSocket: send Upgrade: websocket");
        }
        const name = Name.safeParse(lane);
        if (!name.success) throw new QueueError("invalid_request", "invalid lane name", [{ path: ["lane"], message: name.error.issues[0]!.message }]);
        // A sharded lane has a socket per shard: `?shard=i` (default 0) opens shard i's (docs/api.md "Live events").
        const shardParam = c.req.query("shard");
        const shard = shardParam === undefined ? 0 : Number(shardParam);
        if (!Number.isInteger(shard) || shard < 0 || shard >= MAX_SHARDS || (shardParam !== undefined && String(shard) !== shardParam)) {
          throw new QueueError("invalid_request", `shard must be an integer 0..${MAX_SHARDS - 1}`, [{ path: ["shard"], message: `must be 0..${MAX_SHARDS - 1}` }]);
        }
        // The lane never sees the ticket: it has done its work here.
        const url = new URL(c.req.url);
        url.searchParams.delete("ticket");
        url.searchParams.delete("shard");
        const answer = await laneOf(c, shardObjectName(name.data, shard)).fetch(new Request(url, c.req.raw));
        if (answer.status === 101) return answer;
        // A refusal of the lane (say, lane_schema_too_new) at its code's status.
        const body = (await answer.json()) as { error: ErrorBody };
        throw QueueError.from(body.error);
      })
  );
}
