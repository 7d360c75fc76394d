/**
 * The generated Asterisk files: a configuration built through `/1.1` compared byte for byte with
 * the golden files beside this test, and the safety rules on records `/1.1` may or may not let
 * through (escaped `;`, refused line breaks, left-out names).
 *
 * After an intended change of the output, rewrite the golden files and review their diff:
 *   UPDATE_GOLDEN=1 deno test --allow-all tests/lib/platform/asterisk/config_files_test.ts
 */
import assert from "node:assert/strict";
import {
  AGENT_CONTEXT,
  agentMemberInterface,
  asteriskConfig,
  type ConfigSnapshot,
  readConfigSnapshot,
} from "../../../../lib/platform/asterisk/config_files.ts";
import type { CustomEndpointRecord, SipEndpointRecord } from "../../../../lib/store/endpoints.ts";
import { EXTEN_PATTERN, type ExtensionRecord } from "../../../../lib/store/extensions.ts";
import { type LineRecord, lines } from "../../../../lib/store/lines.ts";
import { meetings } from "../../../../lib/store/meetings.ts";
import { buildQueue } from "../../../../lib/store/queues.ts";
import { transact } from "../../../../lib/store/records.ts";
import { buildUser, type UserRecord } from "../../../../lib/store/users.ts";
import { type Confd, setupConfd, type TestContext } from "../../../helpers.ts";

const GOLDEN = new URL("./golden/", import.meta.url);
const FILES = [
  ["pjsip", "pjsip_svc.conf"],
  ["extensions", "extensions_svc.conf"],
  ["queues", "queues_svc.conf"],
  ["voicemail", "voicemail_svc.conf"],
  ["confbridge", "confbridge_svc.conf"],
] as const;

async function created(api: Confd, path: string, body: unknown): Promise<{ id: number }> {
  return await api.create(path, body);
}

async function put(api: Confd, path: string, body?: unknown) {
  const response = await api.put(path, body);
  assert.equal(response.status, 204, `PUT ${path}: ${await response.text()}`);
}

interface PhoneSpec {
  user?: Record<string, unknown>;
  line?: Record<string, unknown>;
  context?: string;
  extens: string[];
  endpoint: ["sip", Record<string, unknown>] | ["sccp"] | ["custom", string];
}

/** A line with its endpoint, extensions and (optionally) user, built as an administrator would. */
async function phone(api: Confd, spec: PhoneSpec): Promise<number> {
  const context = spec.context ?? "default";
  const line = await created(api, "/lines", { context, ...spec.line });
  for (const exten of spec.extens) {
    const extension = await created(api, "/extensions", { exten, context });
    await put(api, `/lines/${line.id}/extensions/${extension.id}`);
  }
  const [type, detail] = spec.endpoint;
  const body = type === "sip" ? detail : type === "custom" ? { interface: detail } : {};
  const endpoint = await created(api, `/endpoints/${type}`, body);
  await put(api, `/lines/${line.id}/endpoints/${type}/${endpoint.id}`);
  if (spec.user) {
    const user = await created(api, "/users", spec.user);
    await put(api, `/users/${user.id}/lines/${line.id}`);
  }
  return line.id;
}

/** Line names are generated at random: the SCCP line's is fixed so the files do not vary. */
async function renameLine(ctx: TestContext, id: number, name: string) {
  await transact(ctx.services.store, async (tx) => {
    const line = (await tx.get(lines, id))!;
    tx.put(lines, { ...line, name });
  });
}

/** alice, bob, carol (SIP), dave (SCCP), erin (custom) in two contexts, lines without user, queues. */
async function scenario() {
  const { ctx, api } = await setupConfd();
  await created(api, "/contexts", {
    name: "office",
    user_ranges: [{ start: "2000", end: "2999" }],
    queue_ranges: [{ start: "3100", end: "3199" }],
  });
  await phone(api, {
    user: {
      firstname: "Alice",
      lastname: "Martin",
      username: "alice",
      ring_seconds: 20,
      simultaneous_calls: 2,
    },
    extens: ["1001"],
    endpoint: ["sip", { username: "alice", secret: "alice-secret" }],
  });
  await phone(api, {
    user: { firstname: "Bob", username: "bob", caller_id: '"Bob D." <1992>' },
    extens: ["1002", "1012"],
    endpoint: ["sip", {
      username: "bob",
      secret: "bob;secret",
      options: [
        ["allow", "g722"],
        ["dtmfmode", "rfc2833"],
        ["dtmf_mode", "rfc4733"],
        ["max_contacts", "2"],
        ["context", "elsewhere"],
        ["set_var", "GREETING=hi;there"],
        ["language", "bad\nvalue"],
      ],
    }],
  });
  await phone(api, {
    user: { firstname: "Carol", username: "carol" },
    line: { caller_id_name: "Carol; Desk", caller_id_num: "1003" },
    extens: ["1003"],
    endpoint: ["sip", { username: "carol", secret: "carol-secret", host: "192.0.2.10" }],
  });
  const dave = await phone(api, {
    user: { firstname: "Dave", username: "dave" },
    extens: ["1004"],
    endpoint: ["sccp"],
  });
  await renameLine(ctx, dave, "sccpdave");
  await phone(api, {
    user: { firstname: "Erin", username: "erin" },
    context: "office",
    extens: ["2001"],
    endpoint: ["custom", "IAX2/erin"],
  });
  // a line without user rings 30 s and keeps no DND or forward
  await phone(api, {
    extens: ["1099"],
    endpoint: ["sip", { username: "lobby", secret: "lobby-secret" }],
  });
  // an endpoint on no line, and a line without endpoint
  await created(api, "/endpoints/sip", { username: "spare", secret: "spare-secret" });
  const bare = await created(api, "/lines", { context: "default" });
  const bareExten = await created(api, "/extensions", { exten: "1098", context: "default" });
  await put(api, `/lines/${bare.id}/extensions/${bareExten.id}`);
  // a disabled extension of alice's context, on no line
  await created(api, "/extensions", { exten: "1097", context: "default", enabled: false });

  const agent = await created(api, "/agents", { number: "8001" });
  const support = await created(api, "/queues", {
    name: "support",
    number: "3001",
    wrapup_seconds: 5,
  });
  await put(api, `/queues/${support.id}/members/agents/${agent.id}`, { penalty: 0 });
  await created(api, "/queues", { name: "sales", number: "3100", context: "office" });
  await created(api, "/queues", { name: "backoffice" });
  // voicemails: alice's and erin's go into the dialplan; one with a comma in its name, a disabled
  // one and one of a reserved context are left out
  const users = (await api.list("/users", "username")).values;
  const userId = async (username: string) => {
    const body = await (await api.get("/users")).json();
    return body.items[users.indexOf(username)].id as number;
  };
  const aliceBox = await created(api, "/voicemails", {
    name: "Alice Martin",
    number: "1001",
    context: "default",
    password: "4242",
    email: "alice@example.com",
    attach_audio: true,
    max_messages: 50,
    language: "fr_FR",
  });
  await put(api, `/users/${await userId("alice")}/voicemails/${aliceBox.id}`);
  const erinBox = await created(api, "/voicemails", {
    name: "Erin",
    number: "2001",
    context: "office",
  });
  await put(api, `/users/${await userId("erin")}/voicemails/${erinBox.id}`);
  await created(api, "/voicemails", { name: "Smith, John", number: "1050", context: "default" });
  await created(api, "/voicemails", {
    name: "Off",
    number: "1051",
    context: "default",
    enabled: false,
  });
  // meeting rooms: a conference on 4000 (PIN, 5 at most, its music, recorded), one with no
  // extension (invitations only); a personal room (a fixed id: the files name it) with a PIN
  const sales = await created(api, "/conferences", {
    name: "Sales",
    pin: "1234",
    max_users: 5,
    music_on_hold: "jazz",
    record: true,
  });
  const salesExten = await created(api, "/extensions", { exten: "4000", context: "default" });
  await put(api, `/conferences/${sales.id}/extensions/${salesExten.id}`);
  await created(api, "/conferences", { name: "Board" });
  await meetings.put(ctx.services.store, {
    id: "00000000-0000-4000-8000-000000000001",
    kind: "personal",
    name: "Alice's room",
    owner_ids: [await userId("alice")],
    number: "4100",
    context: "default",
    pin: "9876",
    persistent: true,
    require_authorization: false,
    created_ms: 0,
    expires_ms: null,
  });
  return ctx;
}

Deno.test("the files for a configuration built through /1.1 are the golden files", async (t) => {
  const ctx = await scenario();
  const config = asteriskConfig(await readConfigSnapshot(ctx.services.store));
  for (const [key, name] of FILES) {
    await t.step(name, async () => {
      const golden = new URL(name, GOLDEN);
      if (Deno.env.get("UPDATE_GOLDEN") === "1") {
        await Deno.mkdir(GOLDEN, { recursive: true });
        await Deno.writeTextFile(golden, config[key]);
      }
      assert.equal(config[key], await Deno.readTextFile(golden));
    });
  }
  await t.step("Unix newlines, a header saying not to edit, no secret of a left-out one", () => {
    for (const [key] of FILES) {
      assert.ok(!config[key].includes("\r"));
      assert.ok(config[key].endsWith("\n"));
      assert.match(config[key], /^; \w+_svc\.conf: generated by svc .* Do not edit/);
    }
    assert.ok(!config.pjsip.includes("spare-secret"));
    assert.ok(!config.pjsip.includes("bad"));
  });
});

// ---- records built by hand: what /1.1 refuses must not break the files either

const noUser = null;

function line(id: number, fields: Partial<LineRecord> = {}): LineRecord {
  return {
    id,
    name: `line${id}`,
    protocol: "sip",
    context: "default",
    position: 1,
    provisioning_code: String(100000 + id),
    caller_id_name: null,
    caller_id_num: null,
    device_id: null,
    endpoint: { type: "sip", id },
    extension_ids: [id],
    user_ids: [],
    ...fields,
  };
}

function sip(id: number, fields: Partial<SipEndpointRecord> = {}): SipEndpointRecord {
  return {
    id,
    username: `sip${id}`,
    secret: `secret${id}`,
    type: "friend",
    host: "dynamic",
    options: [],
    line_id: id,
    ...fields,
  };
}

const extension = (id: number, fields: Partial<ExtensionRecord> = {}): ExtensionRecord => ({
  id,
  exten: String(1000 + id),
  context: "default",
  enabled: true,
  line_id: id,
  ...fields,
});

/** Phones numbered 1…n: line, SIP endpoint and extension of the same id, users as given. */
async function snapshot(
  phones: {
    line?: Partial<LineRecord>;
    sip?: Partial<SipEndpointRecord>;
    extension?: Partial<ExtensionRecord>;
    user?: Partial<UserRecord> | typeof noUser;
  }[],
  queues: Parameters<typeof buildQueue>[1][] = [],
): Promise<ConfigSnapshot> {
  const users: UserRecord[] = [];
  for (const [i, spec] of phones.entries()) {
    if (spec.user === null) continue;
    users.push({
      ...await buildUser(i + 1, { firstname: `User${i + 1}` }),
      line_ids: [i + 1],
      ...spec.user,
    });
  }
  return {
    users,
    lines: phones.map((spec, i) =>
      line(i + 1, { user_ids: spec.user === null ? [] : [i + 1], ...spec.line })
    ),
    sipEndpoints: phones.map((spec, i) => sip(i + 1, spec.sip)),
    sccpEndpoints: [],
    customEndpoints: [],
    extensions: phones.map((spec, i) => extension(i + 1, spec.extension)),
    queues: queues.map((queue, i) => buildQueue(i + 1, queue)),
    agents: [],
    voicemails: [],
    conferences: [],
    meetings: [],
  };
}

/** The lines of `text` that belong to section `[name]` of `type` (pjsip) or context `name`. */
function section(text: string, name: string, type?: string): string[] {
  const blocks = text.split(/\n(?=\[)/);
  const found = blocks.find((block) =>
    block.startsWith(`[${name}]\n`) && (!type || block.includes(`\ntype = ${type}\n`))
  );
  return found?.split("\n") ?? [];
}

Deno.test("values: ; is escaped, line breaks and control characters are refused", async (t) => {
  await t.step("a ; in an option value, a caller id or a secret is written \\;", async () => {
    const config = asteriskConfig(
      await snapshot([{
        sip: { secret: "a;b", options: [["set_var", "X=1;2"]] },
        line: { caller_id_name: "Front; desk" },
      }]),
    );
    assert.ok(section(config.pjsip, "sip1", "auth").includes("password = a\\;b"));
    const endpoint = section(config.pjsip, "sip1", "endpoint");
    assert.ok(endpoint.includes("set_var = X=1\\;2"));
    assert.ok(endpoint.includes('callerid = "Front\\; desk" <1001>'));
  });
  await t.step("an option value with CR or LF is left out, named, not written", async () => {
    const config = asteriskConfig(
      await snapshot([{
        sip: { options: [["language", "fr\r\n[evil]"], ["from_user", "x\u0000y"]] },
      }]),
    );
    assert.ok(!config.pjsip.includes("evil"));
    assert.ok(!config.pjsip.includes("x\u0000y"));
    assert.match(config.pjsip, /; option language left out: its value is empty or holds/);
    assert.match(config.pjsip, /; option from_user left out/);
  });
  await t.step("a caller id with a line break is left out, the endpoint kept", async () => {
    const config = asteriskConfig(await snapshot([{ user: { caller_id: '"A\nB"' } }]));
    const endpoint = section(config.pjsip, "sip1", "endpoint");
    assert.ok(endpoint.length > 0);
    assert.ok(!endpoint.some((row) => row.startsWith("callerid")));
    assert.ok(endpoint.includes("; callerid left out: it holds a line break"));
  });
  await t.step("a secret with a line break leaves the endpoint out, never written", async () => {
    const config = asteriskConfig(await snapshot([{ sip: { secret: "top\nsecret" } }]));
    assert.match(config.pjsip, /; SIP endpoint 1 left out: its secret cannot be written/);
    assert.ok(!config.pjsip.includes("top"));
    assert.ok(!config.pjsip.includes("[sip1]"));
  });
  await t.step("quotes and angle brackets cannot end a caller id early", async () => {
    const config = asteriskConfig(
      await snapshot([{ line: { caller_id_name: 'Evil" <666>', caller_id_num: null } }]),
    );
    assert.ok(section(config.pjsip, "sip1", "endpoint").includes('callerid = "Evil 666" <1001>'));
  });
});

Deno.test("names: what would break a section or the dialplan is left out, by id", async (t) => {
  for (
    const [label, username] of [
      ["a ]", "bad]name"],
      ["a [", "[bad"],
      ["a space", "bad name"],
      ["empty", ""],
    ]
  ) {
    await t.step(`a SIP username with ${label}`, async () => {
      const config = asteriskConfig(await snapshot([{ sip: { username } }, {}]));
      assert.match(config.pjsip, /; SIP endpoint 1 left out: its username is not a valid/);
      assert.match(config.extensions, /; extension 1 left out: the username of SIP endpoint 1/);
      assert.ok(!config.extensions.includes("exten => 1001,"));
      // the others are unaffected
      assert.ok(section(config.pjsip, "sip2", "endpoint").includes("type = endpoint"));
      assert.ok(config.extensions.includes("exten => 1002,hint,PJSIP/sip2"));
    });
  }
  for (
    const context of ["general", "GLOBALS", "svc-user", "svc-agent", "two words", "a,b", "x(y)"]
  ) {
    await t.step(`a line and extension in context ${JSON.stringify(context)}`, async () => {
      const config = asteriskConfig(
        await snapshot([{ line: { context }, extension: { context } }]),
      );
      assert.match(config.pjsip, /; SIP endpoint 1 left out: the context of line 1 is not/);
      assert.match(config.extensions, /; extension 1 left out: its context is not a usable/);
      assert.ok(!config.extensions.includes("exten => 1001,"));
    });
  }
  await t.step("an option name that is no PJSIP endpoint option, or not a name", async () => {
    const config = asteriskConfig(
      await snapshot([{
        sip: { options: [["nat", "yes"], ["allow\n[x]", "ulaw"], ["type", "aor"], ["", "x"]] },
      }]),
    );
    const endpoint = section(config.pjsip, "sip1", "endpoint");
    assert.ok(endpoint.includes("; option nat left out: not a PJSIP endpoint option"));
    assert.ok(endpoint.includes("; option 2 left out: not a valid option name"));
    assert.ok(endpoint.includes("; option type left out: svc sets it"));
    assert.ok(endpoint.includes("; option 4 left out: not a valid option name"));
    assert.ok(!config.pjsip.includes("[x]"));
  });
  await t.step("queues named general, or with a character no queue name has", async () => {
    const config = asteriskConfig(
      await snapshot([], [
        { name: "general", number: "3000" },
        { name: "a b", number: "3001" },
        { name: "ok", number: "3002" },
      ]),
    );
    for (const file of [config.queues, config.extensions]) {
      assert.match(file, /; queue 1 left out: its name is not a usable queue name/);
      assert.match(file, /; queue 2 left out/);
    }
    assert.ok(!config.queues.includes("[general]"));
    assert.ok(config.queues.includes("[ok]"));
    assert.ok(config.extensions.includes("exten => 3002,1,NoOp(queue ok)"));
    assert.ok(!config.extensions.includes("3000"));
  });
  await t.step("a custom interface that could break Dial's arguments", async () => {
    const snap = await snapshot([{ line: { endpoint: { type: "custom", id: 1 } } }]);
    snap.customEndpoints = [{ id: 1, interface: "SIP/a,b)", enabled: true, line_id: 1 }];
    const config = asteriskConfig(snap);
    assert.match(
      config.extensions,
      /; extension 1 left out: the interface of custom endpoint 1 is not a valid interface/,
    );
  });
});

Deno.test("output does not depend on the order records are read in", async () => {
  const snap = await snapshot([{}, { user: null }, {}], [{ name: "q1", number: "3000" }, {
    name: "q2",
    number: "3001",
  }]);
  const reversed: ConfigSnapshot = {
    ...snap,
    users: [...snap.users].reverse(),
    lines: [...snap.lines].reverse(),
    sipEndpoints: [...snap.sipEndpoints].reverse(),
    extensions: [...snap.extensions].reverse(),
    queues: [...snap.queues].reverse(),
  };
  assert.deepEqual(asteriskConfig(reversed), asteriskConfig(snap));
});

Deno.test("svc-user's pattern matches every extension confd accepts", () => {
  // `_[0-9*#+]!`: one of the set, then zero or more characters
  const svcUser = /^[0-9*#+].*$/;
  const extens = ["1", "9", "*", "#", "+33123", "1001", "*21#", "+1", "00", "123456789012345"];
  for (const exten of extens) {
    assert.ok(EXTEN_PATTERN.test(exten), exten);
    assert.ok(svcUser.test(exten), exten);
  }
});

/** The lines of context `[name]` of an extensions file, up to the next section. */
function context(text: string, name: string): string[] {
  const rows = text.split("\n");
  const start = rows.indexOf(`[${name}]`);
  if (start < 0) return [];
  const end = rows.findIndex((row, i) => i > start && row.startsWith("["));
  return rows.slice(start + 1, end < 0 ? undefined : end).filter((row) => !row.startsWith(";"));
}

Deno.test("endpoint codecs: one allow line, !all first; an allow option replaces it", async (t) => {
  await t.step("by default: allow = !all,ulaw,alaw and no disallow", async () => {
    const endpoint = section(asteriskConfig(await snapshot([{}])).pjsip, "sip1", "endpoint");
    assert.deepEqual(endpoint.filter((row) => /^(allow|disallow) /.test(row)), [
      "allow = !all,ulaw,alaw",
    ]);
  });
  await t.step("an allow option is the only allow line", async () => {
    const config = asteriskConfig(await snapshot([{ sip: { options: [["allow", "!all,g722"]] } }]));
    const endpoint = section(config.pjsip, "sip1", "endpoint");
    assert.deepEqual(endpoint.filter((row) => /^(allow|disallow) /.test(row)), [
      "allow = !all,g722",
    ]);
  });
  await t.step("a disallow option still removes from the default, written after it", async () => {
    const config = asteriskConfig(await snapshot([{ sip: { options: [["disallow", "alaw"]] } }]));
    const endpoint = section(config.pjsip, "sip1", "endpoint");
    assert.deepEqual(endpoint.filter((row) => /^(allow|disallow) /.test(row)), [
      "allow = !all,ulaw,alaw",
      "disallow = alaw",
    ]);
  });
});

Deno.test("svc-agent: one extension per line with a device, named by the line id", async (t) => {
  await t.step("the member interface and the context are spelt alike", () => {
    assert.equal(AGENT_CONTEXT, "svc-agent");
    assert.equal(agentMemberInterface(7), "Local/7@svc-agent");
  });
  // 1 SIP, 2 SIP without user, 3 custom, 4 disabled custom, 5 no endpoint, 6 SCCP
  const snap = await snapshot([
    {},
    { user: null },
    { line: { endpoint: { type: "custom", id: 3 } } },
    { line: { endpoint: { type: "custom", id: 4 } } },
    { line: { endpoint: null } },
    { line: { name: "desk6", endpoint: { type: "sccp", id: 6 } } },
  ]);
  const custom = (id: number, enabled: boolean): CustomEndpointRecord => ({
    id,
    interface: `IAX2/phone${id}`,
    enabled,
    line_id: id,
  });
  snap.customEndpoints = [custom(3, true), custom(4, false)];
  snap.sipEndpoints = snap.sipEndpoints.slice(0, 2);
  const config = asteriskConfig(snap);
  await t.step("each ringing the line's device, no timeout, then hanging up", () => {
    assert.deepEqual(context(config.extensions, AGENT_CONTEXT), [
      "exten => 1,1,NoOp(agent on line 1)",
      " same => n,Dial(PJSIP/sip1)",
      " same => n,Hangup()",
      "",
      "exten => 2,1,NoOp(agent on line 2)",
      " same => n,Dial(PJSIP/sip2)",
      " same => n,Hangup()",
      "",
      "exten => 3,1,NoOp(agent on line 3)",
      " same => n,Dial(IAX2/phone3)",
      " same => n,Hangup()",
      "",
      "exten => 6,1,NoOp(agent on line 6)",
      " same => n,Dial(SCCP/desk6)",
      " same => n,Hangup()",
      "",
    ]);
  });
  await t.step("the same interfaces as the hints", () => {
    for (const iface of ["PJSIP/sip1", "PJSIP/sip2", "IAX2/phone3", "SCCP/desk6"]) {
      assert.match(config.extensions, new RegExp(`,hint,${iface.replace("/", "\\/")}\n`));
    }
  });
});

Deno.test("svc-user: call limit, caller id of a dial from queue", async (t) => {
  const config = asteriskConfig(
    await snapshot([{ user: { simultaneous_calls: 3 } }, { user: null }, {}]),
  );
  const svcUser = context(config.extensions, "svc-user");
  const at = (pattern: string) => {
    const i = svcUser.findIndex((row) => row.includes(pattern));
    assert.ok(i >= 0, `svc-user has ${pattern}`);
    return i;
  };
  await t.step("the user's simultaneous_calls is ARG5; 5 for a line without user", () => {
    assert.ok(config.extensions.includes("1(PJSIP/sip1,30,1,default,3))"));
    assert.ok(config.extensions.includes("1(PJSIP/sip2,30,none,default,5))"));
    assert.ok(config.extensions.includes("1(PJSIP/sip3,30,3,default,5))"));
  });
  await t.step("after DND and unconditional forward, before Dial: busy at ARG5 calls", () => {
    const count = at("GROUP_COUNT(${ARG3}@svcuser)");
    assert.equal(
      svcUser[count],
      " same => n,GotoIf($[${GROUP_COUNT(${ARG3}@svcuser)} >= ${ARG5}]?busy)",
    );
    assert.ok(at("svc/dnd/") < count);
    assert.ok(at("svc/fwd_unc/") < count);
    assert.ok(at('GotoIf($["${FWD}" != ""]?forward)') < count);
    // the callee's leg joins the group: Dial tags the channels it creates
    assert.equal(svcUser[count + 1], " same => n,Set(OUTBOUND_GROUP_ONCE=${ARG3}@svcuser)");
    assert.equal(svcUser[count + 2], " same => n(ring),Dial(${ARG1},${ARG2})");
    assert.ok(at("n(busy),Set(FWD=${DB(svc/fwd_busy/${ARG3})})") > count);
  });
  await t.step("a line without user (key none) skips the limit", () => {
    const skip = at('GotoIf($["${ARG3}" = "none"]?ring)');
    assert.equal(skip, at("GROUP_COUNT(") - 1);
    assert.ok(at("svc/fwd_unc/") < skip);
  });
  await t.step("SVC_CALLERID becomes the caller id, first thing after the NoOp", () => {
    assert.equal(svcUser[0], "exten => _[0-9*#+]!,1,NoOp(svc-user ${ARG1})");
    assert.equal(
      svcUser[1],
      " same => n,ExecIf($[${LEN(${SVC_CALLERID})} > 0]?Set(CALLERID(all)=${SVC_CALLERID}))",
    );
  });
  await t.step("every label a GotoIf names exists, once", () => {
    const labels = svcUser.flatMap((row) => [...row.matchAll(/n\((\w+)\),/g)].map((m) => m[1]));
    assert.equal(new Set(labels).size, labels.length);
    for (const row of svcUser) {
      for (const [, label] of row.matchAll(/\]\?(\w+)\)/g)) {
        assert.ok(labels.includes(label), `label ${label}`);
      }
    }
  });
});

/** Every line a comment, blank, a section, `key = value`, or a dialplan line of a section. */
function assertValidConf(
  text: string,
  kind: "pjsip" | "extensions" | "queues" | "voicemail" | "confbridge",
) {
  assert.ok(text.endsWith("\n") && !text.includes("\r"));
  let section: string | null = null;
  let exten = false;
  for (const row of text.slice(0, -1).split("\n")) {
    if (row === "" || row.startsWith(";")) continue;
    const header = /^\[([^\]]+)\]$/.exec(row);
    if (header) {
      section = header[1]!;
      exten = false;
      continue;
    }
    assert.ok(section, `outside any section: ${row}`);
    if (kind === "voicemail") {
      assert.match(row, /^[0-9*#+]+ => [^,]*,[^,]*,[^,]*,[^,]*,[a-z]+=/, row);
    } else if (kind !== "extensions") {
      assert.match(row, /^[a-z0-9_-]+ = \S/, row);
    } else if (row.startsWith("exten => ")) {
      assert.match(row, /^exten => [^,]+,(hint|1|n),\S/, row);
      exten = true;
    } else {
      assert.match(row, /^ same => n(\(\w+\))?,\w+\(/, row);
      assert.ok(exten, `same => without exten: ${row}`);
    }
  }
}

Deno.test("an empty configuration gives valid files: headers, svc's own contexts", async () => {
  const empty: ConfigSnapshot = {
    users: [],
    lines: [],
    sipEndpoints: [],
    sccpEndpoints: [],
    customEndpoints: [],
    extensions: [],
    queues: [],
    agents: [],
    voicemails: [],
    conferences: [],
    meetings: [],
  };
  const config = asteriskConfig(empty);
  for (const [key] of FILES) assertValidConf(config[key], key);
  // only the header: no section at all
  for (const key of ["pjsip", "queues", "voicemail"] as const) {
    assert.ok(config[key].split("\n").every((row) => row === "" || row.startsWith(";")));
  }
  const sections = config.extensions.split("\n").filter((row) => row.startsWith("["));
  assert.deepEqual(sections, [
    "[svc-user]",
    "[svc-hold]",
    "[svc-wait]",
    "[svc-consult]",
    "[svc-conference]",
    "[svc-room-invite]",
    "[svc-listen]",
    "[svc-agent]",
    "[svc-queue-out]",
    "[svc-queue-in]",
  ]);
  assert.deepEqual(context(config.extensions, "svc-agent"), [""]);
  // and the golden ones too
  const full = asteriskConfig(
    await snapshot([{}, { user: null }], [{ name: "q", number: "3000" }]),
  );
  for (const [key] of FILES) assertValidConf(full[key], key);
});
