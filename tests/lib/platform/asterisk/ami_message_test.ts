/** The AMI message, the action serialiser and the streaming parser, on recorded Asterisk sessions. */
import assert from "node:assert/strict";
import {
  AmiMessage,
  AmiParser,
  formatAction,
} from "../../../../lib/platform/asterisk/ami_message.ts";
import { TRANSCRIPTS } from "../../../peers/ami_replay.ts";

interface RecordLine {
  dir: "send" | "recv";
  data: string;
  eof?: boolean;
}

async function transcriptNames(): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(TRANSCRIPTS)) {
    if (entry.name.endsWith(".jsonl")) names.push(entry.name.slice(0, -6));
  }
  return names.sort();
}

async function records(name: string): Promise<RecordLine[]> {
  const text = await Deno.readTextFile(new URL(`${name}.jsonl`, TRANSCRIPTS));
  return text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
}

/** The headers of one recorded message, split the obvious (slow) way. */
function expectedHeaders(data: string): [string, string][] {
  return data.slice(0, -4).split("\r\n").map((line) => {
    const colon = line.indexOf(": ");
    return colon < 0 ? [line.slice(0, -1), ""] : [line.slice(0, colon), line.slice(colon + 2)];
  });
}

/** A small fixed-seed generator (mulberry32), so that the chunk cuts are the same every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Cuts `bytes` into chunks of 1 to 300 bytes (a fifth of them 1 to 3 bytes, to cut CRLFs). */
function chunks(bytes: Uint8Array, next: () => number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length;) {
    const size = next() < 0.2 ? 1 + Math.floor(next() * 3) : 1 + Math.floor(next() * 300);
    out.push(bytes.subarray(at, at + size));
    at += size;
  }
  return out;
}

Deno.test("every recorded recv stream, cut at random, parses into its recorded messages", async () => {
  const next = random(20261123);
  const names = await transcriptNames();
  assert.ok(names.length >= 20);
  let total = 0;
  for (const name of names) {
    const recvs = (await records(name)).filter((r) => r.dir === "recv" && !r.eof);
    const [banner, ...messages] = recvs;
    assert.equal(banner?.data, "Asterisk Call Manager/11.0.0\r\n", name);
    const garbage: string[] = [];
    const parser = new AmiParser({ onGarbage: (reason) => garbage.push(reason) });
    const stream = new TextEncoder().encode(recvs.map((r) => r.data).join(""));
    const parsed: AmiMessage[] = [];
    for (const chunk of chunks(stream, next)) parsed.push(...parser.push(chunk));
    assert.equal(parser.banner, "Asterisk Call Manager/11.0.0", name);
    assert.deepEqual(garbage, [], name);
    assert.equal(parsed.length, messages.length, name);
    parsed.forEach((message, i) => {
      assert.deepEqual(message.headers, expectedHeaders(messages[i]!.data), `${name} #${i}`);
    });
    total += parsed.length;
  }
  assert.ok(total > 1500);
});

Deno.test("a value holding a bare LF (17) and repeated keys are kept", async () => {
  const recvs = (await records("17-reload")).filter((r) => r.dir === "recv" && !r.eof);
  const parser = new AmiParser();
  const messages = recvs.flatMap((r) => parser.push(r.data));
  const bareLf = messages.find((m) => m.get("Message")?.startsWith("Unable to retrieve endpoint"));
  assert.equal(bareLf?.get("Message"), "Unable to retrieve endpoint dave\n");
  assert.equal(bareLf?.response, "Error");
  const output = messages.find((m) => m.get("Message") === "Command output follows");
  assert.ok(output !== undefined && output.all("Output").length > 5);
  const channel = (await records("02-dial-answered"))
    .filter((r) => r.dir === "recv" && r.data.startsWith("Event: NewAccountCode"))
    .flatMap((r) => new AmiParser({ banner: false }).push(r.data))[0];
  assert.deepEqual(channel?.all("ChanVariable"), ["USR_crm=42", "USR_ticket=T-1001"]);
  assert.equal(channel?.get("AccountCode"), "acme");
  assert.equal(channel?.get("OldAccountCode"), "");
});

Deno.test("AmiMessage: get, all, event, response, actionId, format", () => {
  const event = new AmiMessage([
    ["Event", "UserEvent"],
    ["Privilege", "user,all"],
    ["ActionId", "svc-7"],
    ["Variable", "a=1"],
    ["Variable", "b=2"],
    ["Empty", ""],
  ]);
  assert.equal(event.event, "UserEvent");
  assert.equal(event.response, undefined);
  assert.equal(event.actionId, "svc-7"); // any case
  assert.equal(event.get("variable"), "a=1");
  assert.deepEqual(event.all("Variable"), ["a=1", "b=2"]);
  assert.equal(event.get("Empty"), "");
  assert.equal(event.get("Missing"), undefined);
  assert.equal(event.has("privilege"), true);
  const text = "Event: UserEvent\r\nPrivilege: user,all\r\nActionId: svc-7\r\n" +
    "Variable: a=1\r\nVariable: b=2\r\nEmpty: \r\n\r\n";
  assert.equal(event.format(), text);
  assert.equal(String(event), text);
  assert.deepEqual(new AmiParser({ banner: false }).push(text)[0]?.headers, event.headers);
  const response = new AmiMessage([["Response", "Success"], ["ActionID", "x"]]);
  assert.equal(response.response, "Success");
  assert.equal(response.event, undefined);
});

Deno.test("formatAction: repeated keys, no undefined, and no CR or LF anywhere", () => {
  assert.equal(
    formatAction("Originate", {
      Channel: "PJSIP/alice",
      Variable: ["__USR_crm=42", "USR_ticket=T-1"],
      Account: undefined,
      Async: "true",
    }, "svc-1"),
    "Action: Originate\r\nActionID: svc-1\r\nChannel: PJSIP/alice\r\n" +
      "Variable: __USR_crm=42\r\nVariable: USR_ticket=T-1\r\nAsync: true\r\n\r\n",
  );
  assert.equal(formatAction("Ping", {}, "svc-2"), "Action: Ping\r\nActionID: svc-2\r\n\r\n");
  for (const bad of ["x\r\nAction: Hangup", "x\nEvents: off", "x\r"]) {
    assert.throws(() => formatAction("Setvar", { Value: bad }, "svc-3"), TypeError);
    assert.throws(() => formatAction("Setvar", { Variable: ["ok", bad] }, "svc-3"), TypeError);
    assert.throws(() => formatAction(bad, {}, "svc-3"), TypeError);
    assert.throws(() => formatAction("Ping", {}, bad), TypeError);
  }
  assert.throws(() => formatAction("Ping", { "A: b": "c" }, "svc-4"), TypeError);
  assert.throws(() => formatAction("Ping", { ActionID: "other" }, "svc-4"), TypeError);
});

Deno.test("garbage is skipped and reported, never thrown", async (t) => {
  const ok = "Event: Ping\r\nA: 1\r\n\r\n";

  await t.step("lines without a colon, a cut line, binary bytes, unknown events", () => {
    const reasons: string[] = [];
    const parser = new AmiParser({ onGarbage: (reason) => reasons.push(reason) });
    const bytes = new Uint8Array([0, 1, 2, 0xff, 0xfe, 13, 10, 13, 10]);
    const messages = [
      ...parser.push("Asterisk Call Manager/11.0.0\r\n"),
      ...parser.push("no colon here\r\nEvent: Half\r\nKey: value\r\nthis line is cu"),
      ...parser.push("t\r\nKeyOnly:\r\n: no key\r\n\r\n"),
      ...parser.push(bytes),
      ...parser.push("Event: NoSuchEventEver\r\nX: y\r\n\r\n"),
      ...parser.push(ok),
    ];
    assert.deepEqual(messages.map((m) => m.event), ["Half", "NoSuchEventEver", "Ping"]);
    assert.deepEqual(messages[0]?.headers, [["Event", "Half"], ["Key", "value"], ["KeyOnly", ""]]);
    assert.equal(reasons.length, 4); // "no colon here", the cut line, ": no key", the bytes
    assert.equal(parser.garbage, 4);
  });

  await t.step("a 5 MB value is dropped and the parser resynchronises", () => {
    const reasons: string[] = [];
    const parser = new AmiParser({ banner: false, onGarbage: (reason) => reasons.push(reason) });
    const huge = new TextEncoder().encode(`Event: Huge\r\nValue: ${"x".repeat(5_000_000)}\r\n\r\n`);
    const messages: AmiMessage[] = [];
    for (let at = 0; at < huge.length; at += 65536) {
      messages.push(...parser.push(huge.subarray(at, at + 65536)));
    }
    messages.push(...parser.push(ok));
    assert.deepEqual(messages.map((m) => m.event), ["Ping"]);
    assert.equal(reasons.length, 1);
    assert.match(reasons[0]!, /longer than/);
    // in one piece too
    const whole = new AmiParser({ banner: false });
    assert.deepEqual(whole.push(new TextDecoder().decode(huge) + ok).map((m) => m.event), ["Ping"]);
    assert.equal(whole.garbage, 1);
  });

  await t.step("an end of message cut anywhere, and UTF-8 cut inside a character", () => {
    const text = "Event: Ünïcode\r\nName: Zoë\r\n\r\n" + ok;
    const bytes = new TextEncoder().encode(text);
    for (let cut = 1; cut < bytes.length; cut++) {
      const parser = new AmiParser({ banner: false });
      const messages = [
        ...parser.push(bytes.subarray(0, cut)),
        ...parser.push(bytes.subarray(cut)),
      ];
      assert.deepEqual(messages.map((m) => m.event), ["Ünïcode", "Ping"], `cut at ${cut}`);
      assert.equal(messages[0]?.get("Name"), "Zoë");
    }
  });
});
