/**
 * The agent daemon's commands (decisions §9): login, logoff, pause and unpause by id and by
 * number, each answering 204, and every error they answer.
 */
import assert from "node:assert/strict";
import type { AgentStatus } from "../../../lib/agent_control.ts";
import { MiB } from "../../../lib/http.ts";
import { callCenter, expectAgentdError } from "./fixtures.ts";

const alicesLine = { extension: "1001", context: "default" };
const bobsLine = { extension: "1002", context: "default" };

Deno.test("login, logoff, pause and unpause, by id and by number: 204", async (t) => {
  const { agent, api } = await callCenter();
  const by = { id: `/by-id/${agent.id}`, number: "/by-number/8001" };
  const status = () => api.status<AgentStatus>(by.id);

  for (const [name, path] of Object.entries(by)) {
    await t.step(`by ${name}`, async () => {
      await api.command(`${path}/login`, alicesLine);
      assert.deepEqual([(await status()).logged, (await status()).extension], [true, "1001"]);
      await api.command(`${path}/pause`, { reason: name });
      assert.deepEqual([(await status()).state, (await status()).paused_reason], [
        "AgentOnPause",
        name,
      ]);
      await api.command(`${path}/unpause`);
      assert.equal((await status()).state, "AgentReady");
      await api.command(`${path}/logoff`);
      assert.equal((await status()).logged, false);
    });
  }
  await t.step("a body is not read by logoff and unpause", async () => {
    await api.command(`${by.id}/login`, alicesLine);
    await api.command(`${by.id}/unpause`, "{not json");
    await api.command(`${by.id}/logoff`, "{not json");
  });
  await t.step("a logged-out agent logs in again, on another line", async () => {
    await api.command(`${by.number}/login`, bobsLine);
    assert.equal((await status()).extension, "1002");
  });
});

Deno.test("pause: an optional reason, a string or null; other fields ignored", async (t) => {
  const { api } = await callCenter();
  await api.command("/by-number/8001/login", alicesLine);
  const reason = async () => (await api.status<AgentStatus>("/by-number/8001")).paused_reason;
  const cases: [body: unknown, reason: string | null][] = [
    [undefined, null],
    ["  ", null],
    [{}, null],
    [{ reason: null }, null],
    [{ reason: "lunch", other: 1 }, "lunch"],
    [{ reason: "" }, ""],
  ];
  for (const [body, expected] of cases) {
    await t.step(`${JSON.stringify(body)} → ${expected}`, async () => {
      await api.command("/by-number/8001/unpause");
      await api.command("/by-number/8001/pause", body);
      assert.equal(await reason(), expected);
    });
  }
  await t.step(
    "pausing a paused agent replaces the reason; unpausing a ready one is a no-op",
    async () => {
      await api.command("/by-number/8001/pause", { reason: "first" });
      await api.command("/by-number/8001/pause", { reason: "second" });
      assert.equal(await reason(), "second");
      await api.command("/by-number/8001/unpause");
      await api.command("/by-number/8001/unpause");
      assert.equal((await api.status<AgentStatus>("/by-number/8001")).state, "AgentReady");
    },
  );
});

Deno.test("404 no such agent on every route", async (t) => {
  const { agent, api } = await callCenter();
  const unknown = [
    "/by-id/999",
    "/by-id/abc",
    `/by-id/0${agent.id}`, // one agent, one path: no leading zero
    "/by-id/1.5",
    "/by-id/-1",
    `/by-id/${"9".repeat(400)}`,
    "/by-number/9999",
    "/by-number/80a1",
    "/by-number/8001.0",
    `/by-number/${"8".repeat(41)}`,
    `/by-number/${"x".repeat(5000)}`,
  ];
  for (const path of unknown) {
    await t.step(path.slice(0, 40), async () => {
      await expectAgentdError(await api.get(path), 404, "no such agent");
      await expectAgentdError(await api.post(`${path}/login`, alicesLine), 404, "no such agent");
      for (const command of ["logoff", "pause", "unpause"]) {
        await expectAgentdError(await api.post(`${path}/${command}`), 404, "no such agent");
      }
    });
  }
});

Deno.test("404 no such extension and context", async (t) => {
  const { t: sim, api } = await callCenter();
  const refused = async (body: unknown) =>
    await expectAgentdError(
      await api.post("/by-number/8001/login", body),
      404,
      "no such extension and context",
    );
  await t.step("an unknown extension", () => refused({ extension: "1999", context: "default" }));
  await t.step("an extension of another context", async () => {
    await refused({ extension: "1001", context: "from-extern" });
    await refused({ extension: "1001", context: "nowhere" });
  });
  await t.step("an extension of no line", async () => {
    await sim.api.create("/extensions", { exten: "1500", context: "default" });
    await refused({ extension: "1500", context: "default" });
  });
  await t.step("a disabled extension", async () => {
    const { id } = await sim.api.create("/extensions", { exten: "1501", context: "default" });
    const line = await sim.api.create("/lines", { context: "default" });
    assert.equal((await sim.api.put(`/lines/${line.id}/extensions/${id}`)).status, 204);
    assert.equal((await sim.api.put(`/extensions/${id}`, { enabled: false })).status, 204);
    await refused({ extension: "1501", context: "default" });
  });
  assert.equal((await api.status<AgentStatus>("/by-number/8001")).logged, false);
});

Deno.test("409 already logged, extension and context already in use, not logged in", async (t) => {
  const { t: sim, agent, api } = await callCenter();
  await sim.api.create("/agents", { number: "8002" });
  await api.command("/by-number/8001/login", alicesLine);

  await t.step("already logged, on that line or another", async () => {
    for (const body of [alicesLine, bobsLine]) {
      const response = await api.post(`/by-id/${agent.id}/login`, body);
      await expectAgentdError(response, 409, "already logged");
    }
  });
  await t.step("another agent on that line", async () => {
    await expectAgentdError(
      await api.post("/by-number/8002/login", alicesLine),
      409,
      "extension and context already in use",
    );
    await api.command("/by-number/8002/login", bobsLine);
  });
  await t.step("logoff, pause, unpause of a logged-out agent", async () => {
    await api.command("/by-number/8001/logoff");
    for (const path of [`/by-id/${agent.id}`, "/by-number/8001"]) {
      for (const command of ["logoff", "pause", "unpause"]) {
        await expectAgentdError(await api.post(`${path}/${command}`), 409, "not logged in");
      }
    }
  });
  const statuses = await api.status<AgentStatus[]>("");
  assert.deepEqual(statuses.map((status) => [status.number, status.extension]), [
    ["8001", null],
    ["8002", "1002"],
  ]);
});

Deno.test("400 invalid fields: <names>", async (t) => {
  const { agent, api } = await callCenter();
  const login: [body: unknown, names: string][] = [
    [undefined, "extension, context"],
    ["", "extension, context"],
    ["{oops", "extension, context"],
    ["[1]", "extension, context"],
    ["null", "extension, context"],
    ["42", "extension, context"],
    [{}, "extension, context"],
    [{ context: "default" }, "extension"],
    [{ extension: "1001" }, "context"],
    [{ extension: 1001, context: "default" }, "extension"],
    [{ extension: "1001", context: ["default"] }, "context"],
    [{ extension: null, context: null }, "extension, context"],
    [{ extension: "", context: "default" }, "extension"],
    [{ extension: "1001", context: "" }, "context"],
  ];
  for (const path of [`/by-id/${agent.id}`, "/by-number/8001"]) {
    await t.step(`${path}/login`, async () => {
      for (const [body, names] of login) {
        const response = await api.post(`${path}/login`, body);
        await expectAgentdError(response, 400, `invalid fields: ${names}`);
      }
    });
  }
  await t.step("unknown fields are ignored", async () => {
    await api.command(`/by-id/${agent.id}/login`, { ...alicesLine, queue: 3, extra: null });
  });
  await t.step("pause", async () => {
    for (const body of ["{oops", "[1]", "null", "7", { reason: 5 }, { reason: ["a"] }]) {
      const response = await api.post("/by-number/8001/pause", body);
      await expectAgentdError(response, 400, "invalid fields: reason");
    }
    assert.equal((await api.status<AgentStatus>("/by-number/8001")).paused, false);
  });
  await t.step("a bad body is refused before the agent is looked up", async () => {
    const response = await api.post("/by-id/999/login", {});
    await expectAgentdError(response, 400, "invalid fields: extension, context");
  });
});

Deno.test("a body over 1 MiB: 413, before it is read whole", async () => {
  const { api } = await callCenter();
  const reason = "x".repeat(MiB);
  for (const path of ["/by-number/8001/login", "/by-number/8001/pause"]) {
    const response = await api.post(path, { reason, extension: "1001", context: "default" });
    await expectAgentdError(response, 413, `request body is larger than ${MiB} bytes`);
  }
});
