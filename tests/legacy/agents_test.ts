/**
 * The 1.0 agent routes on the simulated PBX in virtual time: `agentLogin` (taking a line over),
 * `agentLogout`, and the `togglePause` table of the spec and decisions §9 (ready → paused,
 * paused → ready, wrap-up → ready, ringing or on a call → paused when it ends, logged out → 400
 * `AgentNotLoggedIn`), each change an `AgentStateEvent` in order.
 */
import assert from "node:assert/strict";
import { expectError } from "../helpers.ts";
import { agentSummary } from "../lib/platform/fixtures.ts";
import { expectSuccess, legacySim } from "./fixtures.ts";

const WRAPUP_SECONDS = 30;

/** alice (1001) and bob (1002) answer by hand; agents 8001 and 8002 in queue sales. */
async function fixture() {
  const f = await legacySim({}, WRAPUP_SECONDS);
  for (const extension of ["1001", "1002"]) {
    await f.t.sim.setPolicy(extension, { policy: "manual" });
  }
  const post = (path: string, body: unknown) => f.call("POST", path, body);
  const login = (phone: string, agentNumber: string) =>
    post("/agentLogin/", { agentphonenumber: phone, agentnumber: agentNumber });
  const toggle = (phone = "1001") => post("/togglePause/", { phoneNumber: phone });
  /** The agent events since the last call: name, agent number, phone. */
  const events = () =>
    agentSummary(f.t.take()).map(([name, number, phone]) => [name, number, phone]);
  const presence = async (agentId: number) => {
    const { logged, paused, extension, state } = await f.t.sim.agentPresence(agentId);
    return { logged, paused, extension, state };
  };
  return { ...f, post, login, toggle, events, presence };
}

/** The presence of an agent logged on `extension`. */
const loggedOn = (extension: string, paused: boolean, state: string) => ({
  logged: true,
  paused,
  extension,
  state,
});

/** The events of agent 8001 on phone 1001 going through `states`. */
const agent8001 = (...states: string[]) => states.map((state) => [state, "8001", "1001"]);

/** Bodies every agent route refuses, with the code of each. */
const BAD_BODIES: [body: unknown, code: string, message: RegExp][] = [
  ["", "JsonBodyNotFound", /no JSON body/],
  ["{oops", "JsonErrorDecoding", /not valid JSON/],
  ["[]", "JsonErrorDecoding", /JSON object/],
  [{ phoneNumber: 1001 }, "JsonErrorDecoding", /^field phoneNumber: expected a string$/],
  [{ phone: "1001" }, "JsonErrorDecoding", /^field phoneNumber: required$/],
  [{ phoneNumber: "1".repeat(129) }, "JsonErrorDecoding", /longer than 128/],
];

Deno.test("togglePause follows the state table", async (t) => {
  const f = await fixture();
  const { agent, bob, toggle, events, presence } = f;

  await t.step("logged out (nobody on the phone): 400 AgentNotLoggedIn", async () => {
    await expectError(
      await toggle(),
      400,
      "AgentNotLoggedIn",
      /^no agent is logged on phone 1001$/,
    );
    await expectSuccess(await f.login("1001", "8001"));
    assert.deepEqual(events(), agent8001("AgentReady"));
  });

  await t.step("ready → paused", async () => {
    await expectSuccess(await toggle());
    assert.deepEqual(await presence(agent.id), loggedOn("1001", true, "AgentOnPause"));
    assert.deepEqual(events(), agent8001("AgentOnPause"));
  });

  await t.step("paused → ready", async () => {
    await expectSuccess(await toggle("1001"));
    assert.deepEqual(await presence(agent.id), loggedOn("1001", false, "AgentReady"));
    assert.deepEqual(events(), agent8001("AgentReady"));
  });

  /** bob calls the queue; the agent's phone rings. */
  const queueCall = async () => {
    await f.t.sim.dialNumber(bob, "3000", {});
    await f.t.sim.act("1002", "answer");
    assert.equal((await presence(agent.id)).state, "AgentRinging");
  };

  await t.step("wrapup → ready: the wrap-up ends at once", async () => {
    await queueCall();
    await f.t.sim.act("1001", "answer");
    await f.t.sim.act("1001", "hangup");
    assert.equal((await presence(agent.id)).state, "AgentOnWrapup");
    await expectSuccess(await toggle());
    assert.deepEqual(await presence(agent.id), loggedOn("1001", false, "AgentReady"));
    assert.equal(f.ctx.clock.pending, 0, "no wrap-up timer left");
    assert.deepEqual(
      events(),
      agent8001("AgentRinging", "AgentOnCall", "AgentOnWrapup", "AgentReady"),
    );
  });

  await t.step("on a call → paused, AgentOnPause once the call and its wrap-up end", async () => {
    await queueCall();
    await f.t.sim.act("1001", "answer");
    await expectSuccess(await toggle());
    assert.deepEqual(await presence(agent.id), loggedOn("1001", true, "AgentOnCall"));
    await f.t.sim.act("1002", "hangup");
    await f.t.advance(WRAPUP_SECONDS * 1000);
    assert.equal((await presence(agent.id)).state, "AgentOnPause");
    assert.deepEqual(
      events(),
      agent8001("AgentRinging", "AgentOnCall", "AgentOnWrapup", "AgentOnPause"),
    );
    await expectSuccess(await toggle());
    assert.deepEqual(events(), agent8001("AgentReady"));
  });

  await t.step("ringing → paused, AgentOnPause when the ringing ends", async () => {
    await queueCall();
    await expectSuccess(await toggle());
    assert.deepEqual(await presence(agent.id), loggedOn("1001", true, "AgentRinging"));
    await f.t.sim.act("1001", "reject");
    assert.deepEqual(events(), agent8001("AgentRinging", "AgentOnPause"));
    await f.t.sim.act("1002", "hangup");
  });

  await t.step("wrap-up while paused → ready", async () => {
    await expectSuccess(await toggle()); // paused → ready
    await queueCall();
    await f.t.sim.act("1001", "answer");
    await f.t.sim.act("1001", "hangup");
    await f.t.sim.agentPause(agent.id, null); // paused during the wrap-up (e.g. through /agents)
    await expectSuccess(await toggle());
    assert.equal((await presence(agent.id)).state, "AgentReady");
    assert.deepEqual(events().slice(-2), agent8001("AgentOnWrapup", "AgentReady"));
  });

  await t.step("marked paused on a call, toggled again: ready when the call ends", async () => {
    await queueCall();
    await f.t.sim.act("1001", "answer");
    await expectSuccess(await toggle());
    await expectSuccess(await toggle());
    assert.deepEqual(await presence(agent.id), loggedOn("1001", false, "AgentOnCall"));
    await f.t.sim.act("1002", "hangup");
    await f.t.advance(WRAPUP_SECONDS * 1000);
    assert.deepEqual(
      events(),
      agent8001("AgentRinging", "AgentOnCall", "AgentOnWrapup", "AgentReady"),
    );
  });

  await t.step("logged out again: 400 AgentNotLoggedIn", async () => {
    await expectSuccess(await f.post("/agentLogout/", { phoneNumber: "1001" }));
    assert.deepEqual(events(), agent8001("AgentLoggedOut"));
    await expectError(await toggle(), 400, "AgentNotLoggedIn");
    assert.deepEqual(events(), []);
  });

  await t.step("bad bodies", async () => {
    for (const [body, code, message] of BAD_BODIES) {
      await expectError(await f.post("/togglePause/", body), 400, code, message);
    }
  });
});

Deno.test("agentLogin takes the line over from another agent", async (t) => {
  const f = await fixture();
  const { agent, other, login, events, presence } = f;

  await t.step("8001 on 1001, 8002 on 1002", async () => {
    await expectSuccess(await login("1001", "8001"));
    await expectSuccess(await login("1002", "8002"));
    assert.deepEqual(events(), [["AgentReady", "8001", "1001"], ["AgentReady", "8002", "1002"]]);
  });

  await t.step(
    "8001 logs on 1002: it leaves 1001, 8002 is logged out, then 8001 is ready",
    async () => {
      await expectSuccess(await login("1002", "8001"));
      assert.deepEqual(events(), [
        ["AgentLoggedOut", "8001", "1001"],
        ["AgentLoggedOut", "8002", "1002"],
        ["AgentReady", "8001", "1002"],
      ]);
      assert.deepEqual(await presence(agent.id), loggedOn("1002", false, "AgentReady"));
      assert.equal((await presence(other.id)).logged, false);
    },
  );

  await t.step("on a free line: only this agent's own move", async () => {
    await expectSuccess(await login("1001", "8002"));
    assert.deepEqual(events(), [["AgentReady", "8002", "1001"]]);
  });

  await t.step("again on the same phone: nothing changes, not even a pause", async () => {
    await expectSuccess(await f.toggle("1002"));
    events();
    await expectSuccess(await login("1002", "8001"));
    assert.deepEqual(events(), []);
    assert.equal((await presence(agent.id)).paused, true);
  });

  await t.step("an unknown agent or extension: 400, nobody logged out", async () => {
    await expectError(await login("1001", "9999"), 400, "AgentNotFound", /^no agent 9999$/);
    await expectError(
      await login("1999", "8001"),
      400,
      "ExtensionNotFound",
      /^no line holds extension 1999 in default$/,
    );
    assert.deepEqual(events(), []);
    assert.equal((await presence(agent.id)).extension, "1002");
  });

  await t.step("bad bodies", async () => {
    const cases: [unknown, string, RegExp][] = [
      ["", "JsonBodyNotFound", /no JSON body/],
      ["{oops", "JsonErrorDecoding", /not valid JSON/],
      [{ agentphonenumber: "1001" }, "JsonErrorDecoding", /^field agentnumber: required$/],
      [{ agentnumber: "8001" }, "JsonErrorDecoding", /^field agentphonenumber: required$/],
      [
        { agentphonenumber: 1001, agentnumber: "8001" },
        "JsonErrorDecoding",
        /^field agentphonenumber: expected a string$/,
      ],
    ];
    for (const [body, code, message] of cases) {
      await expectError(await f.post("/agentLogin/", body), 400, code, message);
    }
  });
});

Deno.test("agentLogout logs out the agent on that phone", async (t) => {
  const f = await fixture();
  await expectSuccess(await f.login("1001", "8001"));
  f.events();

  await t.step("logged: AgentLoggedOut", async () => {
    await expectSuccess(await f.post("/agentLogout", { phoneNumber: "1001" }));
    assert.deepEqual(f.events(), agent8001("AgentLoggedOut"));
    assert.equal((await f.presence(f.agent.id)).logged, false);
  });

  await t.step("nobody on that phone, or no such phone: 400 AgentNotLoggedIn", async () => {
    for (const phone of ["1001", "1002", "1999"]) {
      await expectError(
        await f.post("/agentLogout/", { phoneNumber: phone }),
        400,
        "AgentNotLoggedIn",
        new RegExp(`^no agent is logged on phone ${phone}$`),
      );
    }
  });

  await t.step("bad bodies", async () => {
    for (const [body, code, message] of BAD_BODIES) {
      await expectError(await f.post("/agentLogout/", body), 400, code, message);
    }
  });
});
