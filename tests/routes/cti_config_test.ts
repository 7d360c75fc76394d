/**
 * The configuration commands of the CTI socket (docs/cti.md, "Configuration") over a real HTTP
 * server on loopback: `getConfig` of each object type, `getList` of the conference rooms and the
 * agent groups (the queue, agent and member lists are in cti_supervision_test.ts),
 * `getAgentDirectory`; who may ask what, and the errors.
 */
import assert from "node:assert/strict";
import { SETTLE_MS } from "../../lib/cti/supervision.ts";
import { getLine } from "../../lib/store/lines.ts";
import { command, ofType, refusal, world } from "./cti_center.ts";

Deno.test("getConfig: the user's own config and line, to anyone", async () => {
  const w = await world();
  try {
    const pat = await w.plain();
    for (const fields of [{}, { objectType: "user" }]) {
      pat.web("getConfig", fields);
      const config = await pat.type("UserConfigUpdate");
      assert.equal(config.ctiMessage.firstName, "Test");
      assert.equal(config.ctiMessage.lastName, "pat");
    }
    pat.web("getConfig", { objectType: "line" });
    assert.deepEqual((await pat.type("LineConfig")).ctiMessage, {
      id: "-",
      context: "",
      name: "",
      number: "",
      webRtc: false,
      hasDevice: false,
      sipProxyName: "default",
    });

    // alice's SIP line 1001, then a WebRTC line on a phone
    const alice = await w.as(w.alice);
    const line = (await getLine(w.ctx.services.store, w.alice.line_ids[0]!))!;
    const sip = await (await w.admin.get(`/endpoints/sip/${line.endpoint!.id}`)).json();
    alice.web("getConfig", { objectType: "line" });
    assert.deepEqual((await alice.type("LineConfig")).ctiMessage, {
      id: String(line.id),
      name: sip.username,
      context: "default",
      number: "1001",
      webRtc: false,
      hasDevice: false,
      sipProxyName: "default",
    });
    const options = [["webrtc", "yes"]];
    assert.equal((await w.admin.put(`/endpoints/sip/${sip.id}`, { options })).status, 204);
    const device = await w.admin.create("/devices", { vendor: "Snom", model: "D785" });
    assert.equal((await w.admin.put(`/lines/${line.id}/devices/${device.id}`)).status, 204);
    await command(alice, "getConfig", { objectType: "line" });
    const webRtc = alice.messages.findLast((m) => m.msgType === "LineConfig")!.ctiMessage;
    assert.deepEqual([webRtc.webRtc, webRtc.hasDevice, webRtc.vendor], [true, true, "Snom"]);
    // a WebRTC line's own secret, for the user's browser to register with (lib/cti_session)
    assert.equal(webRtc.password, sip.secret);
  } finally {
    await w.close();
  }
});

Deno.test("getConfig of queues, agents and members: a supervisor's, once, one message each", async () => {
  const w = await world();
  try {
    const sam = await w.supervisor();
    sam.web("getConfig", { objectType: "queue" });
    assert.deepEqual(
      [(await sam.type("QueueConfig")).ctiMessage, (await sam.type("QueueConfig")).ctiMessage],
      [
        { id: w.queue.id, name: "sales", displayName: "sales", number: "3000" },
        { id: w.support, name: "support", displayName: "support", number: "3001" },
      ],
    );
    sam.web("getConfig", { objectType: "agent" });
    assert.deepEqual(
      [(await sam.type("AgentConfig")).ctiMessage, (await sam.type("AgentConfig")).ctiMessage],
      [
        { id: w.agent.id, number: "8001", firstName: "", lastName: "", groupId: null },
        { id: w.second.id, number: "8002", firstName: "", lastName: "", groupId: null },
      ],
    );
    sam.web("getConfig", { objectType: "queuemember" });
    assert.deepEqual(
      [(await sam.type("QueueMember")).ctiMessage, (await sam.type("QueueMember")).ctiMessage],
      [
        { agentId: w.agent.id, queueId: w.queue.id, penalty: 0 },
        { agentId: w.second.id, queueId: w.support, penalty: 0 },
      ],
    );
    // once: a change sends nothing more
    await command(sam, "setAgentQueue", { agentId: w.agent.id, queueId: w.support, penalty: 1 });
    await w.ctx.clock.advance(SETTLE_MS);
    await command(sam, "getConfig", { objectType: "user" });
    assert.equal(sam.messages.filter(ofType("QueueMember")).length, 2);

    // a CTI user without a rights profile: refused
    const pat = await w.plain();
    for (const objectType of ["queue", "agent", "queuemember"]) {
      pat.web("getConfig", { objectType });
      assert.deepEqual(await refusal(pat, "getConfig"), {
        error: "Forbidden",
        message: "the user has no supervisor rights profile",
      });
    }
    assert.equal(pat.messages.filter(ofType("QueueConfig")).length, 0);
  } finally {
    await w.close();
  }
});

Deno.test("getConfig and getList: unknown object types and fields of the wrong type", async () => {
  const w = await world();
  try {
    const sam = await w.supervisor();
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ["getConfig", { objectType: "meetme" }, /unknown objectType "meetme" \(user, line,/],
      ["getConfig", { objectType: 5 }, /field objectType/],
      ["getList", {}, /field objectType/],
      ["getList", { objectType: "basequeuemember" }, /unknown objectType "basequeuemember"/],
      ["getList", { objectType: ["queue"] }, /field objectType/],
    ];
    for (const [name, fields, message] of cases) {
      sam.web(name, fields);
      const answer = await refusal(sam, name);
      assert.equal(answer.error, "BadRequest", JSON.stringify(fields));
      assert.match(String(answer.message), message);
    }
    // the socket is still open and answers
    await command(sam, "getConfig");
  } finally {
    await w.close();
  }
});

Deno.test("getList meetme (getConferenceRooms): the conference rooms, to anyone", async () => {
  const w = await world();
  try {
    const pat = await w.plain();
    pat.web("getList", { objectType: "meetme" });
    assert.deepEqual((await pat.type("ConferenceList")).ctiMessage, []);
  } finally {
    await w.close();
  }
});

Deno.test("getList agentgroup: the groups, then again on each change; AgentConfig's groupId follows", async () => {
  const w = await world();
  try {
    const pat = await w.plain();
    pat.web("getList", { objectType: "agentgroup" });
    assert.deepEqual(await refusal(pat, "getList"), {
      error: "Forbidden",
      message: "the user has no supervisor rights profile",
    });

    const sam = await w.supervisor();
    sam.web("getList", { objectType: "agentgroup" });
    assert.deepEqual((await sam.type("AgentGroupList")).ctiMessage, []);
    sam.web("getList", { objectType: "agent" });
    await sam.type("AgentList");

    // groups made through /1.1: the list again within a second
    const team = await w.admin.create("/agentgroups", { name: "team_a", display_name: "Team A" });
    const other = await w.admin.create("/agentgroups", { name: "night" });
    await w.ctx.clock.advance(SETTLE_MS);
    assert.deepEqual((await sam.type("AgentGroupList")).ctiMessage, [
      { id: team.id, name: "team_a", displayName: "Team A" },
      { id: other.id, name: "night", displayName: "night" },
    ]);

    // an agent joins a group: its AgentConfig carries it
    assert.equal((await w.admin.put(`/agentgroups/${team.id}/agents/${w.agent.id}`)).status, 204);
    await w.ctx.clock.advance(SETTLE_MS);
    assert.deepEqual((await sam.type("AgentConfig")).ctiMessage, {
      id: w.agent.id,
      number: "8001",
      firstName: "",
      lastName: "",
      groupId: team.id,
    });
    // nothing changed: no list again
    await w.ctx.clock.advance(SETTLE_MS);
    await command(sam, "getConfig");
    assert.equal(sam.messages.filter(ofType("AgentGroupList")).length, 2);
  } finally {
    await w.close();
  }
});

Deno.test("getAgentDirectory: every agent with its group and state; a supervisor's", async () => {
  const w = await world();
  try {
    const pat = await w.plain();
    pat.web("getAgentDirectory");
    assert.deepEqual(await refusal(pat, "getAgentDirectory"), {
      error: "Forbidden",
      message: "the user has no supervisor rights profile",
    });

    const team = await w.admin.create("/agentgroups", { name: "team" });
    assert.equal((await w.admin.put(`/agentgroups/${team.id}/agents/${w.second.id}`)).status, 204);
    await w.t.sim.agentLogin(w.agent, "1001", "default");
    const sam = await w.supervisor();
    sam.web("getAgentDirectory");
    assert.deepEqual((await sam.type("AgentDirectory")).ctiMessage, {
      directory: [
        {
          agent: { id: w.agent.id, number: "8001", firstName: "", lastName: "", groupId: null },
          agentState: {
            name: "AgentReady",
            agentId: w.agent.id,
            agentNumber: "8001",
            phoneNb: "1001",
            queues: [w.queue.id],
          },
        },
        {
          agent: { id: w.second.id, number: "8002", firstName: "", lastName: "", groupId: team.id },
          agentState: {
            name: "AgentLoggedOut",
            agentId: w.second.id,
            agentNumber: "8002",
            phoneNb: "",
            queues: [w.support],
          },
        },
      ],
    });
  } finally {
    await w.close();
  }
});
