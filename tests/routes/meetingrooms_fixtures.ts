/**
 * Fixtures of the meeting rooms' tests (docs/meetingrooms.md): the call daemon's world (alice
 * 1001, bob 1002, carol 1003, their phones answering by hand on the simulator) with a 2.0 client
 * per user (a CTI token, as a login gives it), and the phones joining a room as a person would:
 * dial its number, answer, type the PIN then `#`.
 */
import type { UserRecord } from "../../lib/store/users.ts";
import { ctiToken } from "../daemons/agentd/fixtures.ts";
import { type CalldWorld, calldWorld } from "../daemons/calld/fixtures.ts";
import { apiCall, expectJson, type TestContext } from "../helpers.ts";

export const ROOMS = "/config/meetingrooms";

/** A 2.0 client with `token`: raw calls, and JSON answers of an expected status. */
export function v2(ctx: TestContext, token: string) {
  const call = apiCall(ctx, "/svc/api/2.0", token);
  return { call, expect: expectJson(call, "/svc/api/2.0") };
}

export type V2 = ReturnType<typeof v2>;

export interface RoomsWorld extends CalldWorld {
  /** Each user's 2.0 client. */
  v2: { alice: V2; bob: V2; carol: V2 };
  /** `user`'s phone dials `number`, answers, and types `pin` then `#` when given. */
  join(user: UserRecord, number: string, pin?: string): Promise<void>;
}

const extensionOf = (user: UserRecord) =>
  ({ alice: "1001", bob: "1002", carol: "1003" })[
    user.username as "alice" | "bob" | "carol"
  ];

/** The call daemon's world and a 2.0 client per user; `env` adds settings. */
export async function roomsWorld(env: Record<string, string> = {}): Promise<RoomsWorld> {
  const w = await calldWorld(env);
  const client = async (user: UserRecord) => v2(w.t.ctx, await ctiToken(w.t.ctx, user));
  return {
    ...w,
    v2: { alice: await client(w.alice), bob: await client(w.bob), carol: await client(w.carol) },
    async join(user, number, pin) {
      const extension = extensionOf(user);
      await w.t.ctx.services.platform.dialNumber(user, number, {});
      await w.act(extension, "answer");
      if (pin !== undefined) await w.t.sim.pressKeys(extension, `${pin}#`);
    },
  };
}

/** alice's new personal room: its view as the 2.0 API answers it. */
export function alicesRoom(w: RoomsWorld, body: Record<string, unknown> = {}) {
  return w.v2.alice.expect<{ id: string; number: string; userPin: string | null }>(
    201,
    "POST",
    `${ROOMS}/personal`,
    { displayName: "Weekly", ...body },
  );
}

/** The participants of the room `roomId` as the platform has them (usernames, muted). */
export async function inRoom(w: CalldWorld, roomId: string) {
  const room = (await w.t.ctx.services.platform.rooms()).find((room) => room.roomId === roomId);
  return (room?.participants ?? []).map((p) => [p.username, p.muted] as const);
}
