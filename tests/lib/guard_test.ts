/**
 * `lib/auth/guard.ts` on the app's router (`CachedRouter` answering each match as one chained
 * handler): a token verified before is accepted without a promise, whichever header carries it
 * (`Authorization: Bearer`, or Wazo's `X-Auth-Token`); headers of any other form take the long
 * way, to the answers `readToken` gives.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { requireAcl } from "../../lib/auth/guard.ts";
import { Tokens } from "../../lib/auth/tokens.ts";
import { CachedRouter } from "../../lib/cached_router.ts";
import { chainMatched } from "../../lib/chain.ts";
import { ManualClock } from "../../lib/clock.ts";
import { apiErrorHandler, type AppEnv } from "../../lib/http.ts";
import { createLogger } from "../../lib/log.ts";

const onError = apiErrorHandler(createLogger("error", () => {}));

async function guarded() {
  const tokens = await Tokens.create(
    "guard-test-secret-long-enough-for-hs256",
    3600,
    new ManualClock(),
  );
  const app = new Hono<AppEnv>({ router: new CachedRouter(chainMatched(onError)) });
  app.onError(onError);
  app.get("/items", requireAcl(tokens, "svc.items.read"), (c) => c.text("ok"));
  app.get("/admin", requireAcl(tokens, "svc.admin.read"), (c) => c.text("ok"));
  const identity = { userId: "7", login: "alice", userType: "cti" as const, acls: ["svc.items.#"] };
  const { token } = await tokens.issue(identity);
  const get = (path: string, headers: Record<string, string>) =>
    app.fetch(new Request(`http://svc.test${path}`, { headers }));
  return { token, get };
}

const codeOf = async (answer: Response | Promise<Response>) => {
  const response = await answer;
  return [
    response.status,
    response.status === 200 ? await response.text() : (await response.json()).error,
  ];
};

Deno.test("a token verified before is accepted at once, by either header", async () => {
  const { token, get } = await guarded();
  const first = get("/items", { Authorization: `Bearer ${token}` });
  assert.ok(first instanceof Promise, "the first time, the token is verified");
  assert.deepEqual(await codeOf(first), [200, "ok"]);
  const forms: Record<string, string>[] = [
    { Authorization: `Bearer ${token}` },
    { Authorization: `bearer  ${token} ` },
    { "X-Auth-Token": token },
    { "X-Auth-Token": ` ${token} ` },
  ];
  for (const headers of forms) {
    const answer = get("/items", headers);
    assert.ok(answer instanceof Response, `no promise with ${JSON.stringify(headers)}`);
    assert.deepEqual(await codeOf(answer), [200, "ok"]);
  }
  const refused = get("/admin", { Authorization: `Bearer ${token}` });
  assert.ok(refused instanceof Response, "a missing ACL is answered at once too");
  assert.deepEqual(await codeOf(refused), [403, "Forbidden"]);
});

Deno.test("headers of another form: the answers readToken gives", async () => {
  const { token, get } = await guarded();
  await get("/items", { Authorization: `Bearer ${token}` });
  // not a Bearer: the X-Auth-Token beside it is the token
  assert.deepEqual(
    await codeOf(get("/items", { Authorization: "Basic eDp5", "X-Auth-Token": token })),
    [
      200,
      "ok",
    ],
  );
  const spaced = `Bearer ${token.slice(0, 9)} ${token.slice(9)}`;
  assert.deepEqual(await codeOf(get("/items", { Authorization: spaced })), [400, "BearerNotFound"]);
  assert.deepEqual(await codeOf(get("/items", { Authorization: "Basic eDp5" })), [
    400,
    "BearerNotFound",
  ]);
  assert.deepEqual(await codeOf(get("/items", {})), [400, "AuthorizationHeaderNotFound"]);
  assert.deepEqual(await codeOf(get("/items", { "X-Auth-Token": "  " })), [
    400,
    "AuthorizationHeaderNotFound",
  ]);
});
