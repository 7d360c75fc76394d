/**
 * What the simulator shows: phone statuses (decisions §3), the control API's phones and calls,
 * and its refusals (docs/platform.md).
 */
import assert from "node:assert/strict";
import { PlatformRefusal } from "../../../lib/platform/port.ts";
import { agentAndQueue, changeUser, phoneUser, simSetup } from "./fixtures.ts";

const refused = (reason: string) => (error: unknown) =>
  error instanceof PlatformRefusal && error.reason === reason;

Deno.test("phoneStatuses: every status value", async (s) => {
  const t = await simSetup();
  const alice = await phoneUser(t, "alice", "1001");
  await phoneUser(t, "bob", "1002");
  const carol = await phoneUser(t, "carol", "1003");
  await agentAndQueue(t, "8001", { name: "sales", number: "3000" });
  for (const extension of ["1001", "1002", "1003"]) {
    await t.sim.setPolicy(extension, { policy: "manual" });
  }
  const statuses = async () =>
    Object.fromEntries(await t.sim.phoneStatuses(["1001", "1002", "1003", "3000", "0612", ""]));

  await s.step("0 idle; -2 for a queue, an outside number and nothing", async () => {
    assert.deepEqual(await statuses(), {
      "1001": 0,
      "1002": 0,
      "1003": 0,
      "3000": -2,
      "0612": -2,
      "": -2,
    });
  });

  await s.step("1 calling while the caller's own phone rings and while it dials", async () => {
    await t.sim.dialNumber(alice, "1002", {});
    assert.equal((await statuses())["1001"], 1);
    await t.sim.act("1001", "answer");
    const now = await statuses();
    assert.deepEqual([now["1001"], now["1002"]], [1, 8]);
  });

  await s.step("2 busy once established, 16 on hold", async () => {
    await t.sim.act("1002", "answer");
    assert.deepEqual([(await statuses())["1001"], (await statuses())["1002"]], [2, 2]);
    await t.sim.act("1002", "hold");
    assert.deepEqual([(await statuses())["1001"], (await statuses())["1002"]], [2, 16]);
  });

  await s.step("-1 with DND or an unavailable phone", async () => {
    await changeUser(t, carol.id, (user) => ({
      ...user,
      services: { ...user.services, dnd: { enabled: true } },
    }));
    assert.equal((await statuses())["1003"], -1);
    await changeUser(t, carol.id, (user) => ({
      ...user,
      services: { ...user.services, dnd: { enabled: false } },
    }));
    assert.equal((await statuses())["1003"], 0);
    await t.sim.setPolicy("1003", { policy: "unavailable" });
    assert.equal((await statuses())["1003"], -1);
  });

  await s.step("back to 0 once the call ends", async () => {
    await t.sim.act("1001", "hangup");
    const now = await statuses();
    assert.deepEqual([now["1001"], now["1002"]], [0, 0]);
  });
});

Deno.test("phoneStatusVersion: kept while no status can change, another after", async (s) => {
  const t = await simSetup();
  const alice = await phoneUser(t, "alice", "1001");
  const bob = await phoneUser(t, "bob", "1002");
  await t.sim.setPolicy("1001", { policy: "manual" });
  await t.sim.setPolicy("1002", { policy: "manual" });
  const version = () => t.sim.phoneStatusVersion();

  const idle = version(); // the steps above read the directory
  assert.notEqual(idle, null);
  await t.sim.phoneStatuses(["1001", "1002"]);
  assert.equal(version(), idle, "reading statuses changes none");

  let last = idle;
  const changed = () => {
    const now = version();
    assert.ok(now !== null && now !== last, `${now} after ${last}`);
    last = now;
  };
  await s.step("another after each step; null while one runs, its listeners included", async () => {
    const during: (number | null)[] = [];
    t.sim.onEvents(() => {
      during.push(version());
      return Promise.resolve();
    });
    await t.sim.dialNumber(alice, "1002", {});
    changed();
    await t.sim.act("1001", "answer");
    changed();
    assert.ok(during.length > 0 && during.every((seen) => seen === null), `${during}`);
    await t.sim.setPolicy("1002", { policy: "unavailable" });
    changed();
    await t.sim.act("1001", "hangup");
    changed();
  });

  await s.step("null after a configuration write, another once the directory is read", async () => {
    await changeUser(t, bob.id, (user) => ({
      ...user,
      services: { ...user.services, dnd: { enabled: true } },
    }));
    assert.equal(version(), null);
    assert.equal((await t.sim.phoneStatuses(["1002"])).get("1002"), -1);
    changed();
    assert.equal(version(), last);
  });
});

Deno.test("phones() and calls(): every phone with its state and policy, then external", async () => {
  const t = await simSetup({ SVC_SIM_ANSWER_MS: "1500", SVC_SIM_TALK_MS: "9000" });
  const alice = await phoneUser(t, "alice", "1001");
  await phoneUser(t, "bob", "1002");
  // a line without user is a phone too
  const line = await t.api.create("/lines", { context: "default" });
  const extension = await t.api.create("/extensions", { exten: "1500", context: "default" });
  await t.api.put(`/lines/${line.id}/extensions/${extension.id}`);

  await t.sim.setPolicy("1002", { policy: "manual", answer_ms: 10 });
  const idle = (extension: string, username: string) => ({
    extension,
    username,
    state: "idle",
    policy: "auto",
    answer_ms: 1500,
    talk_ms: 9000,
    calls: [],
  });
  assert.deepEqual(await t.sim.phones(), [
    idle("1001", "alice"),
    { ...idle("1002", "bob"), policy: "manual", answer_ms: 10 },
    idle("1500", ""),
    idle("external", ""),
  ]);

  const start = t.ctx.clock.now();
  const { linkedId } = await t.sim.dialNumber(alice, "1002", {});
  await t.advance(1500);
  const [first, second] = await t.sim.phones();
  assert.deepEqual([first?.state, first?.calls], ["calling", [linkedId]]);
  assert.deepEqual([second?.state, second?.calls], ["ringing", [linkedId]]);
  const [call] = t.sim.calls();
  assert.deepEqual(call, {
    linkedId,
    legs: [
      { uniqueId: linkedId, extension: "1001", state: "up" },
      { uniqueId: call!.legs[1]!.uniqueId, extension: "1002", state: "ringing" },
    ],
  });
  assert.notEqual(call!.legs[1]!.uniqueId, linkedId);
  assert.match(linkedId, new RegExp(`^${Math.floor(start / 1000)}\\.\\d+$`));
});

Deno.test("act and setPolicy refusals", async () => {
  const t = await simSetup();
  const alice = await phoneUser(t, "alice", "1001");
  await phoneUser(t, "bob", "1002");
  await assert.rejects(() => t.sim.act("1999", "answer"), refused("no_phone"));
  await assert.rejects(() => t.sim.setPolicy("1999", { policy: "auto" }), refused("no_phone"));
  for (const action of ["answer", "reject", "hangup", "hold", "resume"] as const) {
    await assert.rejects(() => t.sim.act("1001", action), refused("no_call"));
    await assert.rejects(() => t.sim.act("external", action), refused("no_call"));
  }
  await assert.rejects(
    () => t.sim.setPolicy("1001", { policy: "sleepy" as never }),
    refused("bad_policy"),
  );
  await assert.rejects(
    () => t.sim.setPolicy("1001", { policy: "auto", answer_ms: -1 }),
    refused("bad_policy"),
  );

  // a call not yet established cannot be held; a ringing one cannot be hung up
  await t.sim.setPolicy("1001", { policy: "manual" });
  await t.sim.setPolicy("1002", { policy: "manual" });
  await t.sim.dialNumber(alice, "1002", {});
  await assert.rejects(() => t.sim.act("1001", "hangup"), refused("no_call"));
  await t.sim.act("1001", "answer");
  await assert.rejects(() => t.sim.act("1001", "hold"), refused("no_call"));
  await assert.rejects(() => t.sim.act("1002", "hangup"), refused("no_call"));
  // the caller may hang up while the callee rings
  await t.sim.act("1001", "hangup");
  assert.deepEqual(t.sim.calls(), []);
});
