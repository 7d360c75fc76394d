/**
 * The baselines of `deno task bench`, on 127.0.0.1 at the port given as the first argument:
 *
 * - the smallest `Deno.serve` server, answering "Hello, world!";
 * - with `json` as second argument, the least an authenticated JSON route of any framework does:
 *   read the `Authorization` header, answer fixed JSON bytes the size of the
 *   contacts list's (20 contacts) with `Content-Type` and an `X-Request-Id` of a counter. It shows
 *   what Deno's HTTP server itself charges for headers read and written, which the hello world
 *   does not pay.
 */
const port = Number(Deno.args[0] ?? "8000");

function jsonAnswer(): (request: Request) => Response {
  const entry = (n: number) => ({
    entry: ["Contact", `Person ${n}`, `06${String(n).padStart(8, "0")}`, "", "false"],
    contact_id: crypto.randomUUID(),
    status: "unknown",
  });
  const bytes = new TextEncoder().encode(
    JSON.stringify({
      headers: ["firstname", "lastname", "number", "mobile", "favorite"],
      entries: Array.from({ length: 20 }, (_, n) => entry(n)),
    }),
  );
  let serial = 0;
  // the header's value is used, as a guard would; answered 200 either way (the readiness probe)
  return (request) => {
    const who = request.headers.get("authorization") ? "bearer" : "anonymous";
    return new Response(bytes, {
      headers: { "Content-Type": "application/json", "X-Request-Id": `${who}-${++serial}` },
    });
  };
}

const handler = Deno.args[1] === "json" ? jsonAnswer() : () => new Response("Hello, world!");
Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, handler);
