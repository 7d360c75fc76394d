/**
 * The 1.0 dial routes, at `/<method>/<domain>/<username>/`: the 2.0 commands of `lib/dial.ts` run
 * for the path user, who is connected first (so the 2.0 rule "the user must be connected" always
 * holds here) and must have a line. Each answers 200 `{"res":"success"}`; every refusal is 400
 * `BadRequest` as in 2.0, an unknown path user 400 `UserNotFound`.
 *
 * - `POST dial` `{number, variables?}`: dials `number` (sanitized as in 2.0).
 * - `POST dialByUsername` `{username, variables?}`: calls that user.
 * - `POST dialFromQueue` `{destination, queueId, callerIdName?, callerIdNumber?, variables?}`:
 *   the 2.0 `/dial/fromqueue` body.
 */
import { type Context, Hono } from "hono";
import { type DialCommand, dialFor, readDial } from "../lib/dial.ts";
import type { AppEnv } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";
import { both, connectedUser, pathUsername } from "./common.ts";
import { legacyIdempotent } from "./idempotency.ts";

export function dialRoutes(services: Services): Hono<AppEnv> {
  /** Connects the path user and runs `command` for it. */
  const run = async (c: Context<AppEnv>, route: string, command: DialCommand) =>
    dialFor(c, services, route, await connectedUser(services, pathUsername(c)), command);
  const once = legacyIdempotent(services);

  return new Hono<AppEnv>()
    .on("POST", both("/dial/:domain/:username"), once, async (c) => {
      return run(c, "1.0 dial", await readDial.number(c, "number"));
    })
    .on("POST", both("/dialByUsername/:domain/:username"), once, async (c) => {
      return run(c, "1.0 dialByUsername", await readDial.user(c));
    })
    .on("POST", both("/dialFromQueue/:domain/:username"), once, async (c) => {
      return run(c, "1.0 dialFromQueue", await readDial.fromQueue(c));
    });
}
