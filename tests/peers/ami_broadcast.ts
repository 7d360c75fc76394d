/**
 * An AMI peer on 127.0.0.1 that behaves as one Asterisk does toward several connections: every
 * event goes to every logged-in connection, in one order (Asterisk's event queue is one for all
 * its sessions). For the tests of several svc processes on one PBX (failover, docs/asterisk.md):
 *
 * - the test plays events (`broadcast`), e.g. the recorded sessions' events with fresh ids for
 *   each round (`recordedRound`);
 * - a `UserEvent` action goes to every connection as the event Asterisk makes of it (svc's
 *   `SvcMark` and call control announcements), as do the queue member actions (`QueueAdd`,
 *   `QueueRemove`, `QueuePause` → `QueueMember*` events, 20 ms after the answer: Asterisk's
 *   `app_queue` sends them through its message bus, after answering);
 * - the channels and queue members the played events leave are what `CoreShowChannels` and
 *   `QueueStatus` list, so a process logging in again resyncs as on a real PBX;
 * - a connection can be dropped (`drop`), and logins refused for a while (`refuseLogins`): one
 *   process losing its connection while the others keep theirs.
 *
 * Each connection is known by the `Mark` of the first `SvcMark` it sent (svc's owner id prefix).
 */
import { type AmiMessage, AmiParser } from "../../lib/platform/asterisk/ami_message.ts";
import { TRANSCRIPTS } from "./ami_replay.ts";

/** An AMI event as `Key: Value` pairs, in order. */
export type AmiFields = Record<string, string>;

interface Session {
  id: number;
  /** The Mark of its first `SvcMark`, once sent. */
  mark: string | null;
  loggedIn: boolean;
  write(text: string): void;
  close(): void;
}

interface Member {
  queue: string;
  iface: string;
  name: string;
  stateInterface: string;
  paused: boolean;
  reason: string;
  penalty: string;
}

const encoder = new TextEncoder();

/** The text of a message from its fields. */
export function amiText(fields: AmiFields | [string, string][]): string {
  const pairs = Array.isArray(fields) ? fields : Object.entries(fields);
  return pairs.map(([key, value]) => `${key}: ${value}\r\n`).join("") + "\r\n";
}

/** Starts the peer on a random port. */
export function startAmiBroadcast() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const sessions = new Set<Session>();
  const served: Promise<void>[] = [];
  /** Uniqueid → the channel's fields, while it lives. */
  const channels = new Map<string, { channel: string; linkedId: string }>();
  /** `<queue>/<interface>` → the member. */
  const members = new Map<string, Member>();
  let sessionCount = 0;
  let refuseUntil = 0;

  /** Follows what the events played leave on the PBX (channels, queue members). */
  function follow(event: AmiMessage): void {
    const name = event.event;
    const uniqueId = event.get("Uniqueid") ?? "";
    if (name === "Newchannel") {
      channels.set(uniqueId, {
        channel: event.get("Channel") ?? "",
        linkedId: event.get("Linkedid") ?? uniqueId,
      });
    } else if (name === "Hangup") channels.delete(uniqueId);
    const key = `${event.get("Queue")}/${event.get("Interface")}`;
    if (name === "QueueMemberAdded") {
      members.set(key, {
        queue: event.get("Queue") ?? "",
        iface: event.get("Interface") ?? "",
        name: event.get("MemberName") ?? "",
        stateInterface: event.get("StateInterface") ?? "",
        paused: event.get("Paused") === "1",
        reason: event.get("PausedReason") ?? "",
        penalty: event.get("Penalty") ?? "0",
      });
    } else if (name === "QueueMemberRemoved") members.delete(key);
    else if (name === "QueueMemberPause") {
      const member = members.get(key);
      if (member) {
        member.paused = event.get("Paused") === "1";
        member.reason = event.get("PausedReason") ?? "";
      }
    }
  }

  const timers = new Set<ReturnType<typeof setTimeout>>();
  /** `broadcast` 20 ms from now (as app_queue's events come after its answers). */
  function later(text: string): void {
    const timer = setTimeout(() => {
      timers.delete(timer);
      broadcast(text);
    }, 20);
    timers.add(timer);
  }

  /** Sends `text` (whole messages) to every logged-in connection, following what it changes. */
  function broadcast(text: string): void {
    for (const event of new AmiParser({ banner: false }).push(text)) follow(event);
    for (const session of sessions) if (session.loggedIn) session.write(text);
  }

  function memberFields(event: string, member: Member, extra: [string, string][] = []) {
    return amiText([
      ["Event", event],
      ...extra,
      ["Queue", member.queue],
      ["MemberName", member.name],
      ["Interface", member.iface],
      ["StateInterface", member.stateInterface],
      ["Membership", "dynamic"],
      ["Penalty", member.penalty],
      ["CallsTaken", "0"],
      ["LastCall", "0"],
      ["InCall", "0"],
      ["Status", "1"],
      ["Paused", member.paused ? "1" : "0"],
      ["PausedReason", member.reason],
    ]);
  }

  /** The answer to one action of `session`. */
  function answer(session: Session, action: AmiMessage): void {
    const name = action.get("Action")?.toLowerCase() ?? "";
    const idLine = action.actionId === undefined ? "" : `ActionID: ${action.actionId}\r\n`;
    const id: [string, string][] = action.actionId === undefined
      ? []
      : [["ActionID", action.actionId]];
    const ok = (message = "") =>
      session.write(
        `Response: Success\r\n${idLine}${message ? `Message: ${message}\r\n` : ""}\r\n`,
      );
    const error = (message: string) =>
      session.write(`Response: Error\r\n${idLine}Message: ${message}\r\n\r\n`);
    const list = (items: string[], complete: string) => {
      session.write(`Response: Success\r\n${idLine}EventList: start\r\nMessage: follows\r\n\r\n`);
      for (const item of items) session.write(item);
      session.write(
        amiText([["Event", complete], ...id, ["EventList", "Complete"], [
          "ListItems",
          String(items.length),
        ]]),
      );
    };
    switch (name) {
      case "login":
        if (performance.now() < refuseUntil) {
          error("Authentication failed");
          session.close();
          return;
        }
        ok("Authentication accepted");
        session.write(
          amiText({ Event: "FullyBooted", Privilege: "system,all", Status: "Fully Booted" }),
        );
        session.loggedIn = true;
        return;
      case "logoff":
        session.write(`Response: Goodbye\r\n${idLine}Message: Thanks for all the fish.\r\n\r\n`);
        session.close();
        return;
      case "coreshowchannels":
        return list(
          [...channels].map(([uniqueId, { channel, linkedId }]) =>
            amiText([["Event", "CoreShowChannel"], ...id, ["Channel", channel], [
              "Uniqueid",
              uniqueId,
            ], ["Linkedid", linkedId]])
          ),
          "CoreShowChannelsComplete",
        );
      case "queuestatus":
        return list(
          [...members.values()].map((member) => memberFields("QueueMember", member, id)),
          "QueueStatusComplete",
        );
      case "devicestatelist":
        return list([], "DeviceStateListComplete");
      case "dbgettree":
        return list([], "DBGetTreeComplete");
      case "userevent": {
        if (action.get("UserEvent") === "SvcMark") session.mark ??= action.get("Mark") ?? null;
        ok("Event Sent");
        const fields = action.headers.filter(([key]) => !/^(action|userevent)$/i.test(key));
        broadcast(
          amiText([
            ["Event", "UserEvent"],
            ["Privilege", "user,all"],
            ["UserEvent", action.get("UserEvent") ?? ""],
            ...fields,
          ]),
        );
        return;
      }
      case "queueadd": {
        const key = `${action.get("Queue")}/${action.get("Interface")}`;
        if (members.has(key)) return error("Unable to add interface: Already there");
        ok("Added interface to queue");
        const paused = /^(true|1|yes)$/i.test(action.get("Paused") ?? "");
        const member: Member = {
          queue: action.get("Queue") ?? "",
          iface: action.get("Interface") ?? "",
          name: action.get("MemberName") ?? action.get("Interface") ?? "",
          stateInterface: action.get("StateInterface") ?? action.get("Interface") ?? "",
          paused,
          reason: paused ? action.get("Reason") ?? "" : "",
          penalty: action.get("Penalty") ?? "0",
        };
        later(memberFields("QueueMemberAdded", member, [["Privilege", "agent,all"]]));
        return;
      }
      case "queueremove": {
        const member = members.get(`${action.get("Queue")}/${action.get("Interface")}`);
        if (!member) return error("Unable to remove interface: Not there");
        ok("Removed interface from queue");
        later(memberFields("QueueMemberRemoved", member, [["Privilege", "agent,all"]]));
        return;
      }
      case "queuepause": {
        const member = members.get(`${action.get("Queue")}/${action.get("Interface")}`);
        if (!member) return error("Interface not found");
        ok("Interface paused successfully");
        const paused = /^(true|1|yes)$/i.test(action.get("Paused") ?? "");
        later(
          memberFields(
            "QueueMemberPause",
            { ...member, paused, reason: paused ? action.get("Reason") ?? "" : "" },
            [["Privilege", "agent,all"]],
          ),
        );
        return;
      }
      default:
        ok();
    }
  }

  const serve = async (conn: Deno.TcpConn) => {
    let writing = Promise.resolve();
    let open = true;
    const session: Session = {
      id: ++sessionCount,
      mark: null,
      loggedIn: false,
      write(text: string) {
        if (!open) return;
        const bytes = encoder.encode(text);
        writing = writing.then(async () => {
          for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
        }).catch(() => {});
      },
      close() {
        if (!open) return;
        open = false;
        session.loggedIn = false;
        writing = writing.then(() => conn.close()).catch(() => {});
      },
    };
    sessions.add(session);
    session.write("Asterisk Call Manager/11.0.0\r\n");
    const parser = new AmiParser({ banner: false });
    const buffer = new Uint8Array(65536);
    while (open) {
      const n = await conn.read(buffer).catch(() => null);
      if (n === null) break;
      for (const action of parser.push(buffer.subarray(0, n))) {
        peer.actions.push(action);
        answer(session, action);
      }
    }
    sessions.delete(session);
    session.close();
    await writing;
  };

  const accepting = (async () => {
    for (;;) {
      const conn = await listener.accept().catch(() => null);
      if (conn === null) return;
      conn.setNoDelay(true);
      served.push(serve(conn));
    }
  })();

  const peer = {
    port: (listener.addr as Deno.NetAddr).port,
    /** Every action received, across connections. */
    actions: [] as AmiMessage[],
    /** Sends events (texts of whole messages, or fields) to every logged-in connection. */
    broadcast(...events: (string | AmiFields)[]) {
      broadcast(events.map((event) => typeof event === "string" ? event : amiText(event)).join(""));
    },
    /** The marks (svc's owner prefixes) of the logged-in connections that sent one. */
    marks(): string[] {
      return [...sessions].flatMap((s) => s.loggedIn && s.mark !== null ? [s.mark] : []);
    },
    /** Closes the connections whose mark starts with `prefix` (one svc process's). */
    drop(prefix: string): number {
      let dropped = 0;
      for (const session of sessions) {
        if (session.mark?.startsWith(prefix)) {
          session.close();
          dropped++;
        }
      }
      return dropped;
    },
    /** Refuses every login for `ms` from now. */
    refuseLogins(ms: number) {
      refuseUntil = performance.now() + ms;
    },
    /** The channels alive as the events played left them. */
    channels: () => channels.size,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      listener.close();
      await accepting;
      for (const session of sessions) session.close();
      await Promise.all(served);
    },
  };
  return peer;
}

export type AmiBroadcast = ReturnType<typeof startAmiBroadcast>;

/**
 * The events Asterisk sent in a recorded session (`tests/peers/asterisk_transcripts`), as texts,
 * with the ids of round `round` (`Uniqueid`s and `Linkedid`s `<2000000000 + round * 10 + salt>.<n>`,
 * uuids new): played round after round, each is a new set of calls. What answered the recorder's
 * own actions (responses, list items) is left out.
 */
export async function recordedRound(name: string, round: number, salt = 0): Promise<string[]> {
  const text = await Deno.readTextFile(new URL(`${name}.jsonl`, TRANSCRIPTS));
  const base = 2_000_000_000 + round * 10 + salt;
  const uuids = new Map<string, string>();
  const parser = new AmiParser();
  const events: string[] = [];
  for (const line of text.split("\n")) {
    if (!line) continue;
    const record = JSON.parse(line) as { dir: string; data?: string };
    if (record.dir !== "recv" || !record.data) continue;
    for (const message of parser.push(record.data)) {
      if (message.event === undefined || message.get("Privilege") === undefined) continue;
      if (/^(FullyBooted|SuccessfulAuth)$/.test(message.event)) continue;
      const data = amiText(message.headers)
        .replace(/\b\d{10}\.(\d+)\b/g, (_, n) => `${base}.${n}`)
        .replace(
          /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g,
          (uuid) => {
            let fresh = uuids.get(uuid);
            if (fresh === undefined) uuids.set(uuid, fresh = crypto.randomUUID());
            return fresh;
          },
        );
      events.push(data);
    }
  }
  return events;
}
