/**
 * The baseline of `deno task bench`: the smallest `Deno.serve` server, answering "Hello, world!"
 * on 127.0.0.1 at the port given as the first argument.
 */
const port = Number(Deno.args[0] ?? "8000");
Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, () => new Response("Hello, world!"));
