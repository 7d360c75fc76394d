/**
 * `GET /1.1/users/{id}/push_tokens` (ACL `confd.users.{id}.push_tokens.read`): the mobile push
 * tokens a CTI user registered through `/svc/api/2.0/mobile/push/register…`, for administrators.
 * The user is named by id or uuid like the other user sub-resources; an unknown one is 404.
 * Answer `{"total": n, "items": [{"platform", "token", "registered_at"}]}`, android first;
 * `registered_at` is ISO 8601 in UTC.
 */
import { Hono } from "hono";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import { pushTokensOfUser } from "../../lib/store/push_tokens.ts";
import { listOf, readUser } from "./entities.ts";
import { confdAcl } from "./guard.ts";

export function pushTokenRoutes(services: Services) {
  const { store, tokens } = services;
  return new Hono<AppEnv>().get(
    "/users/:id/push_tokens",
    confdAcl(tokens, "confd.users.{id}.push_tokens.read"),
    async (c) => {
      const user = await readUser(store, c.req.param("id"));
      const items = (await pushTokensOfUser(store, user.id)).map((
        { platform, token, registered_at },
      ) => ({ platform, token, registered_at }));
      return c.json(listOf(items));
    },
  );
}
