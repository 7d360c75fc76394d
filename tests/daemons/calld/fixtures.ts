/**
 * Fixtures of the call daemon's tests: alice 1001, bob 1002 and carol 1003 on SIP lines built
 * through `/1.1`, their phones answering by hand on the simulator, tokens signed directly (theirs
 * as a login gives them, a web service user's holding `calld.#`), and a `/1.0` client sending what
 * wazo-calld-client sends (`X-Auth-Token`, `Accept: application/json`).
 */
import assert from "node:assert/strict";
import type { UserRecord } from "../../../lib/store/users.ts";
import { phoneUser, type SimContext, simSetup } from "../../lib/platform/fixtures.ts";
import { ctiToken, tokenHolding } from "../agentd/fixtures.ts";
import { expectJson } from "../../helpers.ts";

export interface CalldWorld {
  t: SimContext;
  alice: UserRecord;
  bob: UserRecord;
  carol: UserRecord;
  /** Clients with each user's token, and with a web service user's holding `calld.#`. */
  as: { alice: Calld; bob: Calld; carol: Calld; admin: Calld };
  /** The simulated phones. */
  act(extension: string, action: "answer" | "reject" | "hangup" | "hold" | "resume"): Promise<void>;
}

/** The world; `env` adds settings. */
export async function calldWorld(env: Record<string, string> = {}): Promise<CalldWorld> {
  const t = await simSetup(env);
  const alice = await phoneUser(t, "alice", "1001", { lastname: "Liddell" });
  const bob = await phoneUser(t, "bob", "1002");
  const carol = await phoneUser(t, "carol", "1003");
  for (const extension of ["1001", "1002", "1003"]) {
    await t.sim.setPolicy(extension, { policy: "manual" });
  }
  const client = async (user: UserRecord) => calld(t, await ctiToken(t.ctx, user));
  return {
    t,
    alice,
    bob,
    carol,
    as: {
      alice: await client(alice),
      bob: await client(bob),
      carol: await client(carol),
      admin: calld(t, await tokenHolding(t.ctx, ["calld.#"])),
    },
    act: (extension, action) => t.sim.act(extension, action),
  };
}

/** A `/1.0` client with `token` (none: no token sent). */
export function calld(t: Pick<SimContext, "ctx">, token: string | null) {
  const call = (method: string, path: string, body?: unknown) =>
    Promise.resolve(t.ctx.app.request(`/1.0${path}`, {
      method,
      headers: {
        Accept: "application/json",
        ...(token === null ? {} : { "X-Auth-Token": token }),
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    }));
  const expect = expectJson(call, "/1.0");
  return {
    call,
    /** `method path` answering `status` with JSON (the parsed body), or 204 with none (null). */
    expect,
    /** `method path` answering the daemon's error `status`/`errorId`; answers its details. */
    async error(
      status: number,
      errorId: string,
      method: string,
      path: string,
      body?: unknown,
    ): Promise<Record<string, unknown>> {
      const error = await expect<Record<string, unknown>>(status, method, path, body);
      assert.deepEqual(Object.keys(error).sort(), ["details", "error_id", "message", "timestamp"]);
      assert.equal(error.error_id, errorId, JSON.stringify(error));
      assert.equal(typeof error.message, "string");
      assert.equal(typeof error.timestamp, "number");
      return error.details as Record<string, unknown>;
    },
  };
}

export type Calld = ReturnType<typeof calld>;

/** The parties of the calls in progress, as `GET /1.0/calls` shows them. */
export async function calls(w: CalldWorld) {
  return (await w.as.admin.expect<{ items: Record<string, unknown>[] }>(200, "GET", "/calls"))
    .items;
}

/** The `call_id` of `user`'s party (the newest when several). */
export async function callIdOf(w: CalldWorld, user: UserRecord): Promise<string> {
  const mine = (await calls(w)).filter((call) => call.user_uuid === user.uuid);
  assert.ok(mine.length, `${user.username} is in a call`);
  return mine.at(-1)!.call_id as string;
}

/** alice calls bob through `/1.0/users/me/calls`; both answer. Answers alice's call object. */
export async function aliceCallsBob(w: CalldWorld) {
  const call = await w.as.alice.expect(201, "POST", "/users/me/calls", { extension: "1002" });
  await w.act("1001", "answer");
  await w.act("1002", "answer");
  return call;
}
