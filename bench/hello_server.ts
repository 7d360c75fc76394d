/**
 * The baselines of `deno task bench`, on 127.0.0.1 at the port given as the first argument:
 *
 * - the smallest `Deno.serve` server, answering "Hello, world!";
 * - with `json <bytes>` after the port, the least an authenticated JSON route of any framework
 *   does: read the `Authorization` header, answer fixed JSON of that many bytes (the size of the
 *   route it stands beside) with `Content-Type` and an `X-Request-Id` of a counter. It shows what
 *   Deno's HTTP server itself charges for headers read and written and for the body, which the
 *   hello world does not pay.
 */
const port = Number(Deno.args[0] ?? "8000");

function jsonAnswer(size: number): (request: Request) => Response {
  // a JSON array of one string, padded to `size` bytes; kept as text, the faster body: Deno copies
  // a byte body in `new Response` (73 KB: 22k answers/s as bytes, 44k as text)
  const text = JSON.stringify(["".padEnd(Math.max(0, size - 4), "x")]);
  let serial = 0;
  // the header's value is used, as a guard would; answered 200 either way (the readiness probe)
  return (request) => {
    const who = request.headers.get("authorization") ? "bearer" : "anonymous";
    return new Response(text, {
      headers: { "Content-Type": "application/json", "X-Request-Id": `${who}-${++serial}` },
    });
  };
}

const handler = Deno.args[1] === "json"
  ? jsonAnswer(Number(Deno.args[2] ?? "2600"))
  : () => new Response("Hello, world!");
Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, handler);
