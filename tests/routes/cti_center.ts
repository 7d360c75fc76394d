/**
 * The call centre of the CTI socket's supervision tests: supervision_fixtures.ts's (alice 1001
 * whose agent 8001 is in queue sales 3000, bob 1002, carol 1003), a second queue `support` with
 * agent 8002, a supervisor `sam` (an admin rights profile) and a plain CTI user `pat`, served on
 * loopback; and the helpers
 * those tests share (tests/routes/cti_supervision_test.ts, cti_config_test.ts, cti_history_test.ts,
 * cti_agent_groups_test.ts).
 */
import assert from "node:assert/strict";
import { REFRESH_INTERVAL_MS } from "../../lib/cti/supervision.ts";
import { adminProfile, setProfile } from "../../lib/rights/profiles.ts";
import { addAgent } from "../lib/platform/fixtures.ts";
import { confd, ctiUser, login } from "../helpers.ts";
import { type Client, type Message, serve } from "./cti_fixtures.ts";
import { callCenter } from "./supervision_fixtures.ts";

/** The call centre of supervision_fixtures.ts, a second queue, served on loopback. */
export async function world() {
  const center = await callCenter();
  const { t, ctx } = center;
  const support = await t.api.create("/queues", { name: "support", number: "3001" }) as {
    id: number;
  };
  const second = await addAgent(t, "8002", support.id);
  const admin = await confd(ctx);
  const sam = await ctiUser(ctx, "sam");
  await setProfile(ctx.services.store, adminProfile(sam.id)); // every queue and agent
  await ctiUser(ctx, "pat"); // a plain CTI user
  const served = serve(ctx);
  const { open } = served;
  return {
    ...center,
    support: support.id,
    second,
    /** A `/1.1` client holding the whole daemon. */
    admin,
    open,
    supervisor: () => login(ctx, "login", "sam").then(open),
    plain: () => login(ctx, "login", "pat").then(open),
    /** A socket of `username` (a user of the centre), given the password `<username>-pw`. */
    async as(user: { id: number; username: string | null }) {
      const given = await admin.put(`/users/${user.id}`, { password: `${user.username}-pw` });
      assert.equal(given.status, 204);
      return await open(await login(ctx, "login", user.username!));
    },
    /** Runs the refreshes due after a change. */
    flush: () => ctx.clock.advance(REFRESH_INTERVAL_MS),
    close: served.close,
  };
}

export type World = Awaited<ReturnType<typeof world>>;

export const ofType = (msgType: string, test: (message: Message) => boolean = () => true) =>
(
  message: Message,
) => message.msgType === msgType && test(message);

/** A statistics list as an object. */
export const named = (list: unknown, key = "name") =>
  Object.fromEntries(
    (list as Record<string, unknown>[]).map((item) => [item[key], item.value]),
  );

/** The next `Error` of `command`; its `error` and `message`. */
export async function refusal(client: Client, command: string) {
  const error = await client.next(
    ofType("Error", (m) => m.ctiMessage.command === command),
    `${command}'s Error`,
  );
  return { error: error.ctiMessage.error, message: error.ctiMessage.message };
}

/** The next `AgentError` of `command` (an agent command the agent's state refuses). */
export async function agentRefusal(client: Client, command: string) {
  const error = await client.next(
    ofType("AgentError", (m) => m.ctiMessage.command === command),
    `${command}'s AgentError`,
  );
  return { error: error.ctiMessage.Error, message: error.ctiMessage.message };
}

/** Sends a ping and waits for its Pong: what the socket was sent before is in. */
export async function settled(client: Client): Promise<void> {
  client.send({ claz: "ping" });
  await client.type("Pong");
}

/** Sends a command and waits until it ran (the socket runs messages in order). */
export async function command(client: Client, name: string, fields: Record<string, unknown> = {}) {
  client.web(name, fields);
  await settled(client);
}
