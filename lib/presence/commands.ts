/**
 * The presence and phone hint commands of the CTI channel (docs/cti.md, "Presence and phone
 * hints"), as `cti.js` sends them: `userStatusUpdate` (`Cti.changeUserStatus`),
 * `subscribeToPhoneHints` and `unsubscribeFromAllPhoneHints`; and what a socket is sent once open:
 * `UsersStatuses`, then the user's `UserStatusUpdate`.
 */
import * as z from "zod";
import { required } from "../body_schema.ts";
import { ctiCommand, type CtiFamily } from "../cti/command_set.ts";
import { ApiError } from "../errors.ts";
import { MAX_HINT_LENGTH, MAX_HINTS_PER_SOCKET } from "./hints.ts";
import { choosePresence, usersStatuses, userStatusUpdate } from "./presence.ts";
import { shownStatus, STATUS_LIMITS } from "./statuses.ts";
import { readGreeting } from "./store.ts";

const text = (max: number) =>
  z.string(required("a string")).min(1, "must not be empty").max(
    max,
    `longer than ${max} characters`,
  );

export const presenceFamily: CtiFamily = {
  commands: {
    userStatusUpdate: ctiCommand({
      fields: () => z.object({ status: text(STATUS_LIMITS.name) }),
      acl: "svc.cti.presence.{username}.update",
      run: (c, { status }) => choosePresence(c, status),
    }),
    subscribeToPhoneHints: ctiCommand({
      fields: () =>
        z.object({
          phoneNumbers: z.array(text(MAX_HINT_LENGTH), required("an array of numbers")).max(
            MAX_HINTS_PER_SOCKET,
            `more than ${MAX_HINTS_PER_SOCKET} numbers`,
          ),
        }),
      acl: "svc.cti.phone_hints.read",
      async run(c, { phoneNumbers }) {
        const numbers = [...new Set(phoneNumbers)];
        const watched = new Set([...c.session.hints?.keys() ?? [], ...numbers]);
        if (watched.size > MAX_HINTS_PER_SOCKET) {
          throw new ApiError(
            400,
            "BadRequest",
            `a socket watches ${MAX_HINTS_PER_SOCKET} numbers at most (it watches ${
              c.session.hints?.size ?? 0
            })`,
          );
        }
        await c.services.cti.watchNumbers(c.session, numbers);
      },
    }),
    unsubscribeFromAllPhoneHints: ctiCommand({
      fields: () => z.object({}),
      acl: null,
      run: (c) => c.services.cti.unwatchNumbers(c.session),
    }),
  },
  async greet({ services, user, reply }) {
    const { statuses, presence } = await readGreeting(services.store, user.id);
    reply(usersStatuses(statuses));
    reply(userStatusUpdate(shownStatus(statuses, presence).name));
  },
};
