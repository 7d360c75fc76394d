/**
 * The baselines of `deno task bench`, on 127.0.0.1 at the port given as the first argument:
 *
 * - the smallest `Deno.serve` server, answering "Hello, world!";
 * - with `json <bytes>` after the port, the least an authenticated JSON route of any framework
 *   does: read the `Authorization` header, answer fixed JSON of that many bytes (the size of the
 *   route it stands beside) with `Content-Type` and an `X-Request-Id` of a counter. It shows what
 *   Deno's HTTP server itself charges for headers read and written and for the body, which the
 *   hello world does not pay;
 * - with `read`, the hello world reading each request's body first, as a minimal app does
 *   (`await request.text()`, a cut body ignored): the baseline of `deno task bench memory`;
 * - with `json-kv <bytes> [store]`, the same answer after one read of one Deno KV key (`store`,
 *   `:memory:` by default), the least a route does whose answer must be checked against the store
 *   on each request (another process sharing it may have changed it). Requests arriving while a
 *   read runs share the next one: none is answered from a read that began before it arrived.
 */
const port = Number(Deno.args[0] ?? "8000");

/** The fixed JSON text of `size` bytes: an array of one string, padded. */
const jsonText = (size: number) => JSON.stringify(["".padEnd(Math.max(0, size - 4), "x")]);

function jsonAnswer(size: number): (request: Request) => Response {
  // kept as text, the faster body: Deno copies a byte body in `new Response` (73 KB: 22k
  // answers/s as bytes, 44k as text)
  const text = jsonText(size);
  let serial = 0;
  // the header's value is used, as a guard would; answered 200 either way (the readiness probe)
  return (request) => {
    const who = request.headers.get("authorization") ? "bearer" : "anonymous";
    return new Response(text, {
      headers: { "Content-Type": "application/json", "X-Request-Id": `${who}-${++serial}` },
    });
  };
}

function jsonAfterRead(size: number, path: string): Deno.ServeHandler {
  const answer = jsonAnswer(size);
  // no top-level await: the hello world's start stays that of the smallest server
  const opened = Deno.openKv(path).then(async (kv) => (await kv.set(["version"], 1), kv));
  let running = false;
  let next: PromiseWithResolvers<void> | null = null;
  const drain = async () => {
    while (next) {
      const batch = next;
      next = null;
      await (await opened).get(["version"]);
      batch.resolve();
    }
    running = false;
  };
  return async (request) => {
    next ??= Promise.withResolvers();
    const { promise } = next;
    if (!running) {
      running = true;
      drain();
    }
    await promise;
    return answer(request);
  };
}

const [mode, bytes = "2600", store = ":memory:"] = Deno.args.slice(1);
const handler = mode === "json"
  ? jsonAnswer(Number(bytes))
  : mode === "json-kv"
  ? jsonAfterRead(Number(bytes), store)
  : mode === "read"
  ? async (request: Request) => {
    // a body cut short is no answer's business here: the hello is answered all the same
    await request.text().catch(() => "");
    return new Response("Hello, world!");
  }
  : () => new Response("Hello, world!");
Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, handler);
