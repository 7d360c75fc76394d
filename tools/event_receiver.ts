/**
 * A tiny `eventUrl` receiver for trying the demo: prints one line per event posted by svc and
 * answers 200. `deno task receiver` listens on port 8091 (`RECEIVER_PORT` changes it); run the demo
 * with `SVC_EVENT_URL=http://127.0.0.1:8091/pbx/1.0/event/demo/dropbox/`. With `SVC_EVENT_SECRET`
 * set here too, each event's `X-Svc-Signature` is checked.
 */
const port = Number(Deno.env.get("RECEIVER_PORT") ?? "8091");
const secret = Deno.env.get("SVC_EVENT_SECRET");
const key = secret
  ? await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  )
  : null;

async function signatureOf(body: string): Promise<string> {
  const mac = await crypto.subtle.sign("HMAC", key!, new TextEncoder().encode(body));
  return "sha256=" +
    Array.from(new Uint8Array(mac), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** What one event is about, in a few words. */
function summary(event: { username?: string; message?: Record<string, unknown> }): string {
  const message = event.message ?? {};
  const cti = message.ctiMessage as Record<string, unknown> | undefined;
  const detail = cti
    ? `${cti.eventType} DN=${cti.DN} otherDN=${cti.otherDN} linkedId=${cti.linkedId}`
    : message.name ?? (message.msgType === "UserConfigUpdate" ? `dnd=${message.dndEnabled}` : "");
  return `${event.username} ${message.msgType} ${detail}`;
}

Deno.serve({ port, hostname: "127.0.0.1" }, async (request) => {
  const body = await request.text();
  const id = request.headers.get("x-svc-event-id");
  let signature = "";
  if (key) {
    const valid = request.headers.get("x-svc-signature") === await signatureOf(body);
    signature = valid ? " (signature ok)" : " (BAD SIGNATURE)";
  }
  try {
    console.log(`${id} ${summary(JSON.parse(body))}${signature}`);
  } catch {
    console.log(`${id} not JSON: ${body.slice(0, 200)}`);
  }
  return new Response(null, { status: 200 });
});
