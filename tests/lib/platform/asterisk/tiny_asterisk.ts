/**
 * A tiny AMI peer on loopback for scenarios the recorded sessions do not hold: it logs svc in
 * (then `FullyBooted`), answers every action, records them, and plays the events a test writes.
 * Shared by the tests of the call commands and `dialFromMobile`.
 */
import { type AmiMessage, AmiParser } from "../../../../lib/platform/asterisk/ami_message.ts";
import type { PlatformEvent } from "../../../../lib/platform/port.ts";
import { phoneEvents } from "../fixtures.ts";
import { capture } from "../scenario_runner.ts";
import { asteriskContext } from "./fixtures.ts";

/** Actions answered with an empty event list; every other one is answered `Success`. */
const LISTS = new Set(["devicestatelist", "coreshowchannels", "queuestatus", "dbgettree"]);

/** An AMI event (or any message) as `Key: Value` pairs, in order. */
export type AmiFields = Record<string, string>;

/**
 * An AMI peer on loopback that logs svc in (then `FullyBooted`), answers every action, and
 * records them. `notify` is the answer to PJSIPNotify (the lines after the ActionID). `port`: a
 * given one (a server back on its address), else any free one.
 */
export function tinyAsterisk(port = 0) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port });
  const encoder = new TextEncoder();
  const sessions = new Set<{ write(text: string): void }>();
  const conns = new Set<Deno.TcpConn>();
  const served: Promise<void>[] = [];
  const peer = {
    port: (listener.addr as Deno.NetAddr).port,
    actions: [] as AmiMessage[],
    notify: "Response: Success\r\nMessage: NOTIFY sent",
    /** Actions (lower case) to answer `Error` with `message`, as many times as `times` says. */
    refusals: new Map<string, { times: number; message: string }>(),
    /** Sends events to every connection, each as `Key: Value` pairs. */
    send(...events: AmiFields[]) {
      const text = events.map((event) =>
        Object.entries(event).map(([key, value]) => `${key}: ${value}\r\n`).join("") + "\r\n"
      ).join("");
      for (const session of sessions) session.write(text);
    },
    /** The actions named `name` received so far, without their ActionID. */
    sent(name: string) {
      return peer.actions.filter((action) => action.get("Action") === name)
        .map((action) => action.headers.filter(([key]) => key !== "ActionID"));
    },
    async close() {
      listener.close();
      await accepting;
      await Promise.all(served);
    },
    /** Stops as a crashed Asterisk does: the listener and every connection closed at once. */
    async kill() {
      listener.close();
      await accepting;
      for (const conn of [...conns]) {
        conns.delete(conn);
        conn.close();
      }
      await Promise.all(served);
    },
  };
  const serve = async (conn: Deno.TcpConn) => {
    let writing = Promise.resolve();
    const session = {
      write(text: string) {
        const bytes = encoder.encode(text);
        writing = writing.then(async () => {
          for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
        }).catch(() => {});
      },
    };
    sessions.add(session);
    conns.add(conn);
    session.write("Asterisk Call Manager/11.0.0\r\n");
    const parser = new AmiParser({ banner: false });
    const buffer = new Uint8Array(65536);
    let open = true;
    while (open) {
      const n = await conn.read(buffer).catch(() => null);
      if (n === null) break;
      for (const action of parser.push(buffer.subarray(0, n))) {
        peer.actions.push(action);
        const name = action.get("Action")?.toLowerCase() ?? "";
        const id = `ActionID: ${action.actionId}\r\n`;
        if (name === "login") {
          session.write(`Response: Success\r\n${id}Message: Authentication accepted\r\n\r\n`);
          session.write(
            "Event: FullyBooted\r\nPrivilege: system,all\r\nStatus: Fully Booted\r\n\r\n",
          );
        } else if (name === "logoff") {
          session.write(`Response: Goodbye\r\n${id}Message: Thanks for all the fish.\r\n\r\n`);
          open = false;
        } else if (LISTS.has(name)) {
          session.write(`Response: Success\r\n${id}EventList: start\r\nMessage: follows\r\n\r\n`);
          session.write(`Event: ListComplete\r\n${id}EventList: Complete\r\nListItems: 0\r\n\r\n`);
        } else if (name === "pjsipnotify") {
          session.write(`${peer.notify.replace("\r\n", `\r\n${id}`)}\r\n\r\n`);
        } else if ((peer.refusals.get(name)?.times ?? 0) > 0) {
          const refusal = peer.refusals.get(name)!;
          refusal.times--;
          session.write(`Response: Error\r\n${id}Message: ${refusal.message}\r\n\r\n`);
        } else session.write(`Response: Success\r\n${id}\r\n`);
      }
    }
    sessions.delete(session);
    await writing;
    if (conns.delete(conn)) conn.close();
  };
  const accepting = (async () => {
    for (;;) {
      const conn = await listener.accept().catch(() => null);
      if (conn === null) return; // listener closed
      served.push(serve(conn));
    }
  })();
  return peer;
}

export type TinyAsterisk = ReturnType<typeof tinyAsterisk>;

/** A channel of a phone (or a trunk) appearing in call `linkedId`, in `state` (5 ringing, 6 up). */
export const channel = (name: string, uniqueId: string, linkedId: string, state: number) => [
  { Event: "Newchannel", Channel: name, ChannelState: "0", Uniqueid: uniqueId, Linkedid: linkedId },
  {
    Event: "Newstate",
    Channel: name,
    ChannelState: String(state),
    Uniqueid: uniqueId,
    Linkedid: linkedId,
  },
];

/** The adapter logged in to a tiny peer, its events captured. */
export async function connected() {
  const peer = tinyAsterisk();
  const t = await asteriskContext(peer.port);
  const events: PlatformEvent[] = capture(t.ctx);
  t.platform.start();
  await t.platform.firstSync();
  return {
    ...t,
    peer,
    /** Every event handed to the listeners not yet taken by `take` or `takeAll`. */
    events,
    /** The phone events since the last call, as [username, type]. */
    take: () => phoneEvents(events.splice(0)).map((e) => [e.username, e.eventType]),
    /** Every event since the last call. */
    takeAll: () => events.splice(0),
    /** Sends events, then waits until the adapter has handled them. */
    async play(...sent: AmiFields[]) {
      peer.send(...sent);
      await t.platform.settled();
    },
    async close() {
      await t.close();
      await peer.close();
    },
  };
}
