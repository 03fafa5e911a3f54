/**
 * Live events (docs/api.md "Live events"): `POST /v1/tickets` mints a ticket under bearer auth, and
 * `GET /v1/lanes/{lane}/events?ticket=…` checks it and hands the WebSocket upgrade to the lane, which
 * accepts the socket itself; a sharded lane's shards each accept one, which the front worker relays
 * into the client's one socket (events-relay.ts). The events route carries no bearer token (a browser cannot set one on a
 * WebSocket), so the app's bearer middleware skips it: `EVENTS_PATH`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { QueueError, unwrap, type ErrorBody } from "../../shared/errors.js";
import { Name } from "../../shared/schemas.js";
import { accessConfig, reachesLane } from "../access.js";
import { routerOf } from "../lane-call.js";
import { relayShards } from "../events-relay.js";
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
        // The lane never sees the ticket: it has done its work here.
        const url = new URL(c.req.url);
        url.searchParams.delete("ticket");
        const router = routerOf(c);
        // Read afresh: a socket opened on a lane resharded a moment ago hears every shard of it.
        const shards = unwrap(await router.shards(name.data, true));
        const answers = await Promise.all(Array.from({ length: shards }, (_, i) => router.stub(name.data, i).fetch(new Request(url, c.req.raw))));
        const refused = answers.find((answer) => answer.status !== 101);
        if (refused === undefined) {
          if (shards === 1) return answers[0]!;
          return new Response(null, { status: 101, webSocket: relayShards(answers.map((answer) => answer.webSocket!)) });
        }
        for (const answer of answers) answer.webSocket?.accept();
        for (const answer of answers) answer.webSocket?.close(1000, "refused");
        // A refusal of the lane (say, lane_schema_too_new) at its code's status.
        const body = (await refused.json()) as { error: ErrorBody };
        throw QueueError.from(body.error);
      })
  );
}
