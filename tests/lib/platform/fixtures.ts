/**
 * Fixtures of the simulator's scenario tests: users with a phone, agents and queues built through
 * the configuration daemon's API (the records the simulator reads), the platform's events captured
 * as they are handed to listeners, and assertions on phone event sequences.
 */
import assert from "node:assert/strict";
import type {
  AgentStateEvent,
  CallEnded,
  PhoneEvent,
  PhoneEventType,
  PlatformEvent,
} from "../../../lib/platform/port.ts";
import type { SimPlatform } from "../../../lib/platform/sim/mod.ts";
import { type AgentRecord, getAgent } from "../../../lib/store/agents.ts";
import { getQueue, type QueueRecord } from "../../../lib/store/queues.ts";
import { type CallRecord, lastCalls } from "../../../lib/store/call_history.ts";
import { transact } from "../../../lib/store/records.ts";
import { findUserByUsername, type UserRecord, users } from "../../../lib/store/users.ts";
import { type Confd, confd, setup, type TestContext } from "../../helpers.ts";
import type { World } from "./scenarios.ts";

export interface SimContext {
  ctx: TestContext;
  api: Confd;
  sim: SimPlatform;
  /** Every batch handed to the listeners so far. */
  batches: PlatformEvent[][];
  /** Events not yet taken by {@link SimContext.take}. */
  events: PlatformEvent[];
  /** Answers the events captured since the last call, and forgets them. */
  take(): PlatformEvent[];
  /** Moves virtual time on, running the simulator's timers. */
  advance(ms: number): Promise<void>;
}

/** A fresh app whose platform's events are captured; `env` adds settings. */
export async function simSetup(env: Record<string, string> = {}): Promise<SimContext> {
  const ctx = await setup(env);
  const api = await confd(ctx);
  const context: SimContext = {
    ctx,
    api,
    sim: ctx.services.sim!,
    batches: [],
    events: [],
    take() {
      const taken = context.events;
      context.events = [];
      return taken;
    },
    advance: (ms) => ctx.clock.advance(ms),
  };
  ctx.services.platform.onEvents((batch) => {
    context.batches.push(batch);
    context.events.push(...batch);
    return Promise.resolve();
  });
  return context;
}

/** Answers a `/1.1` POST's created body, asserting 201. */
async function created(api: Confd, path: string, body: unknown) {
  return await api.create(path, body) as { id: number };
}

/** Asserts a `/1.1` PUT answers 204. */
async function put(api: Confd, path: string, body?: unknown) {
  const response = await api.put(path, body);
  assert.equal(response.status, 204, `PUT ${path}: ${await response.text()}`);
}

/**
 * A user with a SIP line holding `exten` in `default`, built through `/1.1` as an administrator
 * would; `fields` are more user fields (ring_seconds, simultaneous_calls, …).
 */
export async function phoneUser(
  t: Pick<SimContext, "api" | "ctx">,
  username: string,
  exten: string,
  fields: Record<string, unknown> = {},
  endpoint: Record<string, unknown> = {},
): Promise<UserRecord> {
  const { api } = t;
  const user = await created(api, "/users", { firstname: username, username, ...fields });
  const line = await created(api, "/lines", { context: "default" });
  const extension = await created(api, "/extensions", { exten, context: "default" });
  const sip = await created(api, "/endpoints/sip", endpoint);
  await put(api, `/lines/${line.id}/extensions/${extension.id}`);
  await put(api, `/lines/${line.id}/endpoints/sip/${sip.id}`);
  await put(api, `/users/${user.id}/lines/${line.id}`);
  return (await findUserByUsername(t.ctx.services.store, username))!;
}

/** An agent `number` and a queue holding it, built through `/1.1`. */
export async function agentAndQueue(
  t: Pick<SimContext, "api" | "ctx">,
  agentNumber: string,
  queue: { name: string; number: string; wrapup_seconds?: number },
) {
  const agent = await created(t.api, "/agents", { number: agentNumber });
  const made = await created(t.api, "/queues", queue);
  await put(t.api, `/queues/${made.id}/members/agents/${agent.id}`, { penalty: 0 });
  return { agent: await agentRecord(t, agent.id), queue: await queueRecord(t, made.id) };
}

/** Adds agent `number` to the queue `queueId`. */
export async function addAgent(
  t: Pick<SimContext, "api" | "ctx">,
  agentNumber: string,
  queueId: number,
) {
  const agent = await created(t.api, "/agents", { number: agentNumber });
  await put(t.api, `/queues/${queueId}/members/agents/${agent.id}`, { penalty: 0 });
  return await agentRecord(t, agent.id);
}

export async function agentRecord(
  t: Pick<SimContext, "ctx">,
  id: number,
): Promise<AgentRecord> {
  return (await getAgent(t.ctx.services.store, id))!;
}

export async function queueRecord(
  t: Pick<SimContext, "ctx">,
  id: number,
): Promise<QueueRecord> {
  return (await getQueue(t.ctx.services.store, id))!;
}

/** Changes a user record in the store, as any configuration change does. */
export async function changeUser(
  t: SimContext,
  userId: number,
  change: (user: UserRecord) => UserRecord,
): Promise<UserRecord> {
  return await transact(t.ctx.services.store, async (tx) => {
    const user = (await tx.get(users, userId))!;
    const changed = change(user);
    tx.put(users, changed);
    return changed;
  });
}

/** `user` with its `kind` forward enabled toward `destination`. */
export const withForward = (
  kind: "busy" | "noanswer" | "unconditional",
  destination: string,
) =>
(user: UserRecord): UserRecord => ({
  ...user,
  forwards: { ...user.forwards, [kind]: { enabled: true, destination } },
});

export const phoneEvents = (events: PlatformEvent[]) =>
  events.filter((event): event is PhoneEvent => event.kind === "phone");

export const agentEvents = (events: PlatformEvent[]) =>
  events.filter((event): event is AgentStateEvent => event.kind === "agent");

export const callEnds = (events: PlatformEvent[]) =>
  events.filter((event): event is CallEnded => event.kind === "call_ended");

/** An expected phone event: its user, type, DN, otherDN and a name for its leg. */
export type Expected = [
  username: string,
  eventType: PhoneEventType,
  DN: string,
  otherDN: string,
  leg: string,
];

/**
 * Asserts the phone events of `events` are exactly `expected`, in order; that they share one
 * linkedId (`linkedId` when given), which is the uniqueId of the leg named `firstLeg`; that events
 * of one leg share a uniqueId (`"<seconds>.<n>"`) and different legs have different ones; and that
 * `userData` is `PLATFORM_USERID` (the user's id) plus exactly `usr`.
 */
export function assertPhoneEvents(
  events: PlatformEvent[],
  expected: Expected[],
  options: {
    users: UserRecord[];
    linkedId?: string;
    firstLeg?: string;
    usr?: Record<string, string>;
  },
): Map<string, string> {
  const phone = phoneEvents(events);
  assert.deepEqual(
    phone.map((event) => [event.username, event.eventType, event.DN, event.otherDN]),
    expected.map(([username, type, dn, other]) => [username, type, dn, other]),
  );
  const linkedIds = new Set(phone.map((event) => event.linkedId));
  assert.equal(linkedIds.size, 1, `one linkedId: ${[...linkedIds]}`);
  if (options.linkedId) assert.equal([...linkedIds][0], options.linkedId);
  const legs = new Map<string, string>();
  phone.forEach((event, i) => {
    const name = expected[i]![4];
    assert.match(event.uniqueId, /^\d{10}\.\d+$/);
    const known = legs.get(name);
    if (known) assert.equal(event.uniqueId, known, `leg ${name} keeps its uniqueId`);
    else legs.set(name, event.uniqueId);
  });
  assert.equal(new Set(legs.values()).size, legs.size, "one uniqueId per leg");
  if (options.firstLeg) assert.equal(legs.get(options.firstLeg), phone[0]?.linkedId);
  const ids = new Map(options.users.map((user) => [user.username, user.id]));
  for (const event of phone) {
    assert.equal(event.userId, ids.get(event.username), `user id of ${event.username}`);
    assert.deepEqual(event.userData, {
      PLATFORM_USERID: String(event.userId),
      ...options.usr,
    });
  }
  return legs;
}

/** An agent event as compared: name, agent number, phoneNb, username, queues. */
export const agentSummary = (events: PlatformEvent[]) =>
  agentEvents(events).map((event) => [
    event.name,
    event.agentNumber,
    event.phoneNb,
    event.username,
    event.queues,
  ]);

/** The user's history records, newest first. */
export const history = (t: SimContext, user: UserRecord): Promise<readonly CallRecord[]> =>
  lastCalls(t.ctx.services.store, user.id, 100);

/**
 * The people of the scenario table (`scenarios.ts`), built through `/1.1`: alice 1001, bob 1002,
 * carol 1003 with SIP endpoints of their names (as on the recorded Asterisk), queue support 3001
 * holding agent 8001.
 */
export async function scenarioWorld(ctx: TestContext): Promise<World> {
  const t = { ctx, api: await confd(ctx) };
  const user = (name: string, exten: string) =>
    phoneUser(t, name, exten, { password: `${name}-pw` }, {
      username: name,
      secret: `${name}-sip`,
    });
  const alice = await user("alice", "1001");
  const bob = await user("bob", "1002");
  const carol = await user("carol", "1003");
  const { agent, queue } = await agentAndQueue(t, "8001", { name: "support", number: "3001" });
  return { services: ctx.services, alice, bob, carol, agent, queue, api: t.api };
}
