/**
 * The baseline of the CTI socket part of `deno task bench`: the smallest `Deno.serve` WebSocket
 * server, on 127.0.0.1 at the port given as the first argument.
 *
 * - `GET /ws?group=<name>` opens a socket that echoes what it is sent, kept in its group.
 * - `POST /broadcast?group=<name>` sends the request's body, as one text message, to every socket
 *   of the group, then answers 204: the bare form of an event fanned out to a user's sockets.
 * - `GET /` answers 200 (ready).
 */
const port = Number(Deno.args[0] ?? "8000");
const groups = new Map<string, Set<WebSocket>>();

Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, async (request) => {
  const url = new URL(request.url);
  const group = url.searchParams.get("group") ?? "";
  if (url.pathname === "/ws") {
    const { socket, response } = Deno.upgradeWebSocket(request, { idleTimeout: 30 });
    let sockets = groups.get(group);
    if (!sockets) groups.set(group, sockets = new Set());
    const members = sockets;
    socket.onopen = () => members.add(socket);
    socket.onmessage = (event) => socket.send(event.data);
    socket.onclose = () => members.delete(socket);
    socket.onerror = () => {};
    return response;
  }
  if (url.pathname === "/broadcast" && request.method === "POST") {
    const message = await request.text();
    for (const socket of groups.get(group) ?? []) socket.send(message);
    return new Response(null, { status: 204 });
  }
  return new Response("ready");
});
