/**
 * The rights profiles routes (`/svc/api/2.0/rights/profiles`, docs/supervision.md "Who is a
 * supervisor"): each route's ACL (a web service user's; a CTI user's only through an admin
 * profile, never through `alias.ctiuser`), the profiles given, read, listed, exported and
 * imported, every error, and what deleting a queue, an agent group or a user does to them.
 */
import assert from "node:assert/strict";
import {
  adminProfile,
  deleteProfile,
  listProfiles,
  setProfile,
} from "../../lib/rights/profiles.ts";
import {
  apiCall,
  bearer,
  confd,
  ctiUser,
  login,
  setup,
  type TestContext,
  webServiceUser,
} from "../helpers.ts";

const V2 = "/svc/api/2.0";

/** The centre these tests use: users, two queues, an agent group, a caller of the routes. */
async function centre() {
  const ctx = await setup();
  const admin = await confd(ctx);
  const sales = (await admin.create("/queues", { name: "sales" })).id as number;
  const support = (await admin.create("/queues", { name: "support" })).id as number;
  const team = (await admin.create("/agentgroups", { name: "team" })).id as number;
  const sam = await ctiUser(ctx, "sam");
  const pat = await ctiUser(ctx, "pat");
  const holder = await webServiceUser(ctx, ["svc.rest.rights.#"]);
  const token = await login(ctx, "webservice", holder.login);
  const call = apiCall(ctx, V2, token);
  return { ctx, admin, sales, support, team, sam, pat, call, token };
}

/** A caller holding `acls` (a web service user's token, signed directly). */
async function holding(
  ctx: TestContext,
  acls: string[],
  userType: "webservice" | "cti" = "webservice",
  userId = "0",
) {
  const identity = { userId, login: "caller", userType, acls };
  return apiCall(ctx, V2, (await ctx.services.tokens.issue(identity)).token);
}

async function expectError(response: Response, status: number, error: string, message?: RegExp) {
  const body = await response.json();
  assert.equal(response.status, status, JSON.stringify(body));
  assert.equal(body.error, error, JSON.stringify(body));
  if (message) assert.match(body.message, message);
}

Deno.test("each route needs its ACL; a CTI user manages profiles only with an admin profile", async (t) => {
  const { ctx, sam, pat, sales } = await centre();
  const routes: [string, string, string, unknown?][] = [
    ["GET", "/rights/profiles", "svc.rest.rights.profiles.read"],
    ["PUT", `/rights/profiles/${pat.id}`, `svc.rest.rights.profiles.${pat.id}.update`, {
      profile: "supervisor",
      queueIds: [sales],
    }],
    ["GET", `/rights/profiles/${pat.id}`, `svc.rest.rights.profiles.${pat.id}.read`],
    ["POST", "/rights/profiles/import", "svc.rest.rights.profiles.update", "user_id,profile\n"],
    ["DELETE", `/rights/profiles/${pat.id}`, `svc.rest.rights.profiles.${pat.id}.delete`],
  ];
  const narrow = await holding(ctx, ["svc.rest.supervision.#", "confd.#", "svc.rest.config.#"]);
  // what alias.ctiuser holds (svc.rest.config.#.read, …) grants none of them
  const cti = await holding(ctx, ["alias.ctiuser"], "cti", String(sam.id));
  for (const [method, path, acl, body] of routes) {
    await t.step(`${method} ${path}`, async () => {
      await expectError(
        await narrow(method, path, body),
        403,
        "Forbidden",
        new RegExp(`^missing ACL ${acl.replaceAll(".", "\\.")}$`),
      );
      await setProfile(ctx.services.store, { ...adminProfile(sam.id), profile: "supervisor" });
      await expectError(await cti(method, path, body), 403, "Forbidden", /no administrator/);
      await deleteProfile(ctx.services.store, sam.id);
      await expectError(
        await cti(method, path, body),
        403,
        "Forbidden",
        /no supervisor rights profile/,
      );
      const allowed = await (await holding(ctx, [acl]))(method, path, body);
      assert.ok(
        allowed.status < 300,
        `${method} ${path}: ${allowed.status} ${await allowed.text()}`,
      );
      if (method === "PUT") {
        await (await holding(ctx, [acl]))(method, path, body); // again, for the steps after
      }
    });
  }
  await t.step("an admin profile manages profiles, its own too", async () => {
    await setProfile(ctx.services.store, adminProfile(sam.id));
    const put = await cti("PUT", `/rights/profiles/${pat.id}`, { profile: "admin" });
    assert.equal(put.status, 200, await put.text());
    assert.equal((await cti("DELETE", `/rights/profiles/${sam.id}`)).status, 204);
    await expectError(await cti("GET", "/rights/profiles"), 403, "Forbidden");
  });
});

Deno.test("a profile given, read, replaced, listed and taken away", async () => {
  const { sam, pat, sales, support, team, call } = await centre();
  const given = await call("PUT", `/rights/profiles/${sam.id}`, {
    profile: "supervisor",
    queueIds: [support, sales, sales],
    groupIds: [team],
    incalls: ["+33123456789", "0123456789"],
    changeQueues: true,
  });
  const expected = {
    userId: sam.id,
    username: "sam",
    profile: "supervisor",
    queueIds: [sales, support],
    groupIds: [team],
    incalls: ["+33123456789", "0123456789"],
    recording: false,
    listen: false,
    changeQueues: true,
  };
  assert.equal(given.status, 200);
  assert.deepEqual(await given.json(), expected);
  assert.deepEqual(await (await call("GET", `/rights/profiles/${sam.id}`)).json(), expected);
  // replaced whole: what a PUT leaves out takes its default
  const admin = await call("PUT", `/rights/profiles/${pat.id}`, { profile: "admin" });
  assert.deepEqual(await admin.json(), { userId: pat.id, username: "pat", profile: "admin" });
  const list = await call("GET", "/rights/profiles");
  assert.deepEqual(await list.json(), [expected, {
    userId: pat.id,
    username: "pat",
    profile: "admin",
  }]);
  const bare = await call("PUT", `/rights/profiles/${sam.id}`, { profile: "supervisor" });
  assert.deepEqual((await bare.json()).queueIds, []);
  assert.equal((await call("DELETE", `/rights/profiles/${sam.id}`)).status, 204);
  await expectError(await call("GET", `/rights/profiles/${sam.id}`), 404, "ProfileNotFound");
  await expectError(await call("DELETE", `/rights/profiles/${sam.id}`), 404, "ProfileNotFound");
});

Deno.test("the errors: unknown users, users that are no CTI users, unknown ids, bad bodies", async () => {
  const { ctx, admin, sam, sales, call } = await centre();
  const put = (userId: number | string, body: unknown) =>
    call("PUT", `/rights/profiles/${userId}`, body);
  // no such user (a web service user's id is none either)
  const ws = await webServiceUser(ctx, ["confd.#"]);
  for (const id of [999, ws.id + 100, "01", "x", "-1", "9".repeat(300)]) {
    for (const method of ["GET", "PUT", "DELETE"]) {
      const body = method === "PUT" ? { profile: "admin" } : undefined;
      await expectError(await call(method, `/rights/profiles/${id}`, body), 404, "UserNotFound");
    }
  }
  // a user without a username is no CTI user
  const roger = await admin.create("/users", { firstname: "Roger" });
  await expectError(
    await put(roger.id, { profile: "admin" }),
    400,
    "InvalidProfile",
    /no CTI user/,
  );
  const cases: [unknown, RegExp][] = [
    ["", /no JSON body/],
    ["{oops", /not valid JSON/],
    ["[]", /profile/],
    [{}, /profile/],
    [{ profile: "boss" }, /profile/],
    [{ profile: "admin", queueIds: [sales] }, /queueIds/],
    [{ profile: "supervisor", queueIds: 1 }, /field queueIds/],
    [{ profile: "supervisor", queueIds: ["1"] }, /field queueIds/],
    [{ profile: "supervisor", queueIds: [1.5] }, /field queueIds/],
    [{ profile: "supervisor", queueIds: [-1] }, /field queueIds/],
    [{ profile: "supervisor", queueIds: [2 ** 60] }, /field queueIds/],
    [{ profile: "supervisor", queueIds: [...Array(1001).keys()] }, /field queueIds/],
    [{ profile: "supervisor", groupIds: [null] }, /field groupIds/],
    [{ profile: "supervisor", incalls: ["12a"] }, /field incalls/],
    [{ profile: "supervisor", incalls: ["1".repeat(41)] }, /field incalls/],
    [{ profile: "supervisor", recording: "yes" }, /field recording/],
    [{ profile: "supervisor", listen: 1 }, /field listen/],
    [{ profile: "supervisor", changeQueues: null }, /field changeQueues/],
    [{ profile: "supervisor", colour: "red" }, /colour/],
    [{ profile: "supervisor", queueIds: [999] }, /^queue 999 does not exist$/],
    [{ profile: "supervisor", groupIds: [999] }, /^agent group 999 does not exist$/],
  ];
  for (const [body, message] of cases) {
    await expectError(await put(sam.id, body), 400, "InvalidProfile", message);
  }
  // a body over the 2.0 API's limit is refused before it is read whole
  const huge = JSON.stringify({ profile: "supervisor", incalls: ["1".repeat(2 * 1024 * 1024)] });
  await expectError(await put(sam.id, huge), 413, "PayloadTooLarge");
  assert.deepEqual(await listProfiles(ctx.services.store), [], "nothing was written");
});

Deno.test("deleting a queue or an agent group takes it out of every profile; deleting a user, its profile", async () => {
  const { ctx, admin, sam, pat, sales, support, team, call } = await centre();
  const body = { profile: "supervisor", queueIds: [sales, support], groupIds: [team] };
  for (const user of [sam, pat]) {
    assert.equal((await call("PUT", `/rights/profiles/${user.id}`, body)).status, 200);
  }
  assert.equal((await admin.delete(`/queues/${sales}`)).status, 204);
  assert.equal((await admin.delete(`/agentgroups/${team}`)).status, 204);
  for (const user of [sam, pat]) {
    const profile = await (await call("GET", `/rights/profiles/${user.id}`)).json();
    assert.deepEqual([profile.queueIds, profile.groupIds], [[support], []]);
  }
  assert.equal((await admin.delete(`/users/${pat.id}`)).status, 204);
  assert.deepEqual((await listProfiles(ctx.services.store)).map((p) => p.id), [sam.id]);
});

Deno.test("the CSV export and import: all or nothing, an export imported gives the same export", async () => {
  const { ctx, sam, pat, sales, support, team, call, token } = await centre();
  const alex = await ctiUser(ctx, "alex");
  await call("PUT", `/rights/profiles/${sam.id}`, {
    profile: "supervisor",
    queueIds: [sales, support],
    groupIds: [team],
    incalls: ["+33123456789"],
    listen: true,
  });
  await call("PUT", `/rights/profiles/${pat.id}`, { profile: "admin" });
  const exported = await call("GET", "/rights/profiles", undefined, { Accept: "text/csv" });
  assert.equal(exported.headers.get("content-type"), "text/csv; charset=utf-8");
  const csv = await exported.text();
  assert.equal(
    csv,
    "user_id,username,profile,queue_ids,group_ids,incalls,recording,listen,change_queues\r\n" +
      `${sam.id},sam,supervisor,${sales} ${support},${team},+33123456789,false,true,false\r\n` +
      `${pat.id},pat,admin,,,,,,\r\n`,
  );
  const importCsv = (text: string) =>
    call("POST", "/rights/profiles/import", text, { "Content-Type": "text/csv" });

  // every line checked first: one wrong line, nothing written
  const wrongs: [string, RegExp][] = [
    [
      `user_id,profile,queue_ids\n${alex.id},supervisor,${sales}\n${sam.id},boss,\n`,
      /line 3: column profile/,
    ],
    [`user_id,profile,queue_ids\n${alex.id},supervisor,999\n`, /line 2: queue 999 does not exist/],
    [`user_id,profile,queue_ids\n${alex.id},supervisor,x\n`, /line 2: column queue_ids/],
    [
      `user_id,profile,queue_ids\n${alex.id},admin,${sales}\n`,
      /line 2: column queueIds|line 2: .*queue/,
    ],
    [`user_id,profile,listen\n${alex.id},supervisor,maybe\n`, /line 2: column listen/],
    [`user_id,profile\nx,admin\n`, /line 2: user_id "x" is no user id/],
    [`user_id,profile\n999,admin\n`, /line 2: user 999 does not exist/],
    [`user_id,username,profile\n${alex.id},sam,admin\n`, /line 2: user \d+ is alex, not sam/],
    [
      `user_id,profile\n${alex.id},admin\n${alex.id},none\n`,
      /line 3: user \d+ appears on an earlier line/,
    ],
    [`user_id,profile\n${alex.id},admin,extra\n`, /line 2: 2 cells expected, 3 found/],
    [
      `user_id,profile,listen\n${alex.id},,true\n`,
      /line 2: a user without a profile has no listen/,
    ],
  ];
  for (const [text, message] of wrongs) {
    await expectError(await importCsv(text), 400, "InvalidProfile", message);
  }
  const refusedWhole: [string | Uint8Array, RegExp][] = [
    ["", /empty/],
    ["user_id,colour\n1,red\n", /unknown column "colour"/],
    ["user_id,profile,profile\n", /appears more than once/],
    ["username\nsam\n", /needs the columns user_id and profile/],
    ["user_id,profile\n" + `${alex.id},admin\n`.repeat(501), /more than 500 lines/],
  ];
  for (const [text, message] of refusedWhole) {
    await expectError(await importCsv(text as string), 400, "InvalidProfile", message);
  }
  const notUtf8 = await ctx.app.request(`${V2}/rights/profiles/import`, {
    method: "POST",
    headers: { ...bearer(token), "Content-Type": "text/csv" },
    body: new Uint8Array([0xff, 0xfe, 0x00]),
  });
  await expectError(notUtf8, 400, "InvalidProfile", /not valid UTF-8/);
  assert.equal((await (await call("GET", "/rights/profiles")).json()).length, 2, "nothing changed");

  // a line per user: set, replaced, taken away (an empty profile); the others left as they were
  const done = await importCsv(
    `user_id,profile,queue_ids,change_queues\n${alex.id},supervisor,${support},true\n${pat.id},,,\n`,
  );
  assert.deepEqual(await done.json(), { updated: 1, deleted: 1 });
  const after = await (await call("GET", "/rights/profiles")).json();
  assert.deepEqual(
    after.map((p: { username: string; profile: string }) => [p.username, p.profile]),
    [
      ["sam", "supervisor"],
      ["alex", "supervisor"],
    ],
  );
  // the export imported again into a store emptied of profiles: the same export
  await importCsv(`user_id,profile\n${sam.id},none\n${alex.id},none\n`);
  assert.deepEqual(await (await call("GET", "/rights/profiles")).json(), []);
  const restored = await importCsv(csv);
  assert.deepEqual(await restored.json(), { updated: 2, deleted: 0 });
  const again = await call("GET", "/rights/profiles", undefined, { Accept: "text/csv" });
  assert.equal(await again.text(), csv);
});
