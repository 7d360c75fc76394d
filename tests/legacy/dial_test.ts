/**
 * The 1.0 dial routes (`dial`, `dialByUsername`, `dialFromQueue`): the 2.0 commands run for the
 * path user, connected by the call itself; the same `BadRequest` refusals as 2.0.
 */
import assert from "node:assert/strict";
import { ctiUser, expectError } from "../helpers.ts";
import { phoneEvents } from "../lib/platform/fixtures.ts";
import { expectSuccess, legacySim } from "./fixtures.ts";

/** alice (1001), bob (1002), carol (no line), dave (a line without extension). */
async function fixture() {
  const f = await legacySim();
  await ctiUser(f.ctx, "carol");
  const dave = await f.t.api.create("/users", { firstname: "dave", username: "dave" });
  const line = await f.t.api.create("/lines", { context: "default" });
  assert.equal((await f.t.api.put(`/users/${dave.id}/lines/${line.id}`)).status, 204);
  const post = (path: string, body: unknown) => f.call("POST", path, body);
  return { ...f, post };
}

const expectBadRequest = (response: Response, message?: RegExp) =>
  expectError(response, 400, "BadRequest", message);

/** The path user: unknown, without a line, with a line that is no phone. */
async function expectCallerErrors(
  post: (path: string, body: unknown) => Promise<Response>,
  method: string,
  body: unknown,
  needsPhone = true,
) {
  await expectError(
    await post(`/${method}/d/nobody/`, body),
    400,
    "UserNotFound",
    /^user nobody not found$/,
  );
  await expectBadRequest(await post(`/${method}/d/carol/`, body), /^user carol has no line$/);
  if (needsPhone) await expectBadRequest(await post(`/${method}/d/dave/`, body));
}

/** Bad bodies every dial route refuses with 400 `BadRequest`. */
async function expectBodyErrors(
  post: (path: string, body: unknown) => Promise<Response>,
  path: string,
  valid: object,
) {
  await expectBadRequest(await post(path, ""), /no JSON body/);
  await expectBadRequest(await post(path, "{oops"), /not valid JSON/);
  await expectBadRequest(await post(path, "[]"), /JSON object/);
  await expectBadRequest(
    await post(path, { ...valid, variables: { a: 1 } }),
    /^field variables\.a: expected a string$/,
  );
  await expectBadRequest(
    await post(path, { ...valid, variables: [] }),
    /^field variables: expected an object of strings$/,
  );
}

Deno.test("POST dial: dials the number from the user's phone", async (t) => {
  const { t: sim, post } = await fixture();

  await t.step("success: the user's phone rings, then dials the sanitized number", async () => {
    await expectSuccess(
      await post("/dial/d/alice/", {
        number: "+33 (0)6 12 34 56 78",
        variables: { crmTicket: "T-42" },
      }),
    );
    await sim.advance(1000); // alice's phone answers
    const dialing = phoneEvents(sim.take()).find((event) => event.eventType === "EventDialing");
    assert.equal(dialing?.username, "alice");
    assert.equal(dialing?.otherDN, "0033612345678");
    assert.equal(dialing?.userData.USR_crmTicket, "T-42");
    await sim.advance(60_000);
  });

  await t.step("the body", async () => {
    await expectBodyErrors(post, "/dial/d/alice/", { number: "1002" });
    await expectBadRequest(await post("/dial/d/alice/", {}), /^field number: required$/);
    await expectBadRequest(
      await post("/dial/d/alice/", { number: 1002 }),
      /^field number: expected a string$/,
    );
    await expectBadRequest(
      await post("/dial/d/alice/", { number: "abc" }),
      /^number "abc" holds no number to dial$/,
    );
    await expectBadRequest(
      await post("/dial/d/alice/", { destination: "1002" }),
      /^field number: required$/,
    );
  });

  await t.step("the path user", async () => {
    await expectCallerErrors(post, "dial", { number: "1002" });
  });
});

Deno.test("POST dialByUsername: calls another user", async (t) => {
  const { t: sim, post } = await fixture();

  await t.step("success: bob rings once alice's phone answered", async () => {
    await expectSuccess(await post("/dialByUsername/d/alice", { username: "bob" }));
    await sim.advance(1000);
    const events = phoneEvents(sim.take()).map((event) => `${event.username} ${event.eventType}`);
    assert.ok(events.includes("bob EventRinging"), events.join(", "));
    await sim.advance(60_000);
  });

  await t.step("the body and the callee", async () => {
    await expectBodyErrors(post, "/dialByUsername/d/alice/", { username: "bob" });
    await expectBadRequest(
      await post("/dialByUsername/d/alice/", { username: 2 }),
      /^field username: expected a string$/,
    );
    await expectBadRequest(
      await post("/dialByUsername/d/alice/", { username: "nobody" }),
      /^user to call "nobody" not found$/,
    );
    await expectBadRequest(
      await post("/dialByUsername/d/alice/", { username: "carol" }),
      /^user to call carol has no line$/,
    );
  });

  await t.step("the path user", async () => {
    await expectCallerErrors(post, "dialByUsername", { username: "bob" });
  });
});

Deno.test("POST dialFromQueue: the 2.0 dial from a queue", async (t) => {
  const { t: sim, post, queue, agent } = await fixture();
  const valid = { destination: "0612345678", queueId: queue.id };

  await t.step("success: the queue's logged agent rings first", async () => {
    await sim.sim.agentLogin(agent, "1002", "default");
    await expectSuccess(
      await post("/dialFromQueue/d/alice/", {
        ...valid,
        callerIdName: "Sales",
        callerIdNumber: "3000",
        variables: { campaign: "spring" },
      }),
    );
    const events = sim.take().map((event) =>
      event.kind === "phone" ? `${event.username} ${event.eventType}` : `${event.kind}`
    );
    assert.ok(events.includes("bob EventRinging"), events.join(", "));
    await sim.advance(60_000);
  });

  await t.step("the body and the queue", async () => {
    await expectBodyErrors(post, "/dialFromQueue/d/alice/", valid);
    await expectBadRequest(
      await post("/dialFromQueue/d/alice/", { destination: "1" }),
      /^field queueId: required$/,
    );
    await expectBadRequest(
      await post("/dialFromQueue/d/alice/", { ...valid, callerIdName: "x".repeat(81) }),
      /^field callerIdName: longer than 80/,
    );
    await expectBadRequest(
      await post("/dialFromQueue/d/alice/", { ...valid, queueId: 999 }),
      /^no queue id 999$/,
    );
  });

  await t.step("the path user", async () => {
    await expectCallerErrors(post, "dialFromQueue", valid, false);
  });
});
