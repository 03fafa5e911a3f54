// The subscribers of the tests, a Worker of its own: vitest.config.ts sends every outbound fetch of
// the app here, so no test reaches the internet. The path says how to answer:
//   /ok          200
//   /flaky/<n>   503 to the first n deliveries of an event, then 200
//   /gone        410
//   /stuck       answers only after a minute; notes when the sender gives up (request.signal)
// GET /log?event=<id> answers every delivery of that event that arrived, in order.
// Plain JavaScript: Miniflare runs an auxiliary Worker as it is, without a build.
const deliveries = [];

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/log") return Response.json(deliveries.filter((d) => d.eventId === url.searchParams.get("event")));

    const delivery = {
      url: request.url,
      eventId: request.headers.get("webhook-id"),
      topic: request.headers.get("webhook-topic"),
      attempt: Number(request.headers.get("webhook-attempt")),
      signature: request.headers.get("webhook-signature"),
      body: await request.text(),
      status: null,
      aborted: false,
    };
    deliveries.push(delivery);
    const answer = (status) => {
      delivery.status = status;
      return new Response(null, { status });
    };

    const [, behaviour, count] = url.pathname.split("/");
    switch (behaviour) {
      case "ok":
        return answer(200);
      case "flaky": {
        const earlier = deliveries.filter((d) => d.eventId === delivery.eventId && d.url === delivery.url).length - 1;
        return answer(earlier < Number(count) ? 503 : 200);
      }
      case "gone":
        return answer(410);
      case "stuck":
        // A pending timer, not a bare promise: workerd fails a request that can never be answered.
        return new Promise((resolve) => {
          const timer = setTimeout(() => resolve(answer(200)), 60_000);
          request.signal.addEventListener("abort", () => {
            delivery.aborted = true;
            clearTimeout(timer);
            resolve(new Response(null, { status: 499 }));
          });
        });
      default:
        return answer(404);
    }
  },
};
