/**
 * CTI commands on the PBX that belong to no other concern (docs/cti.md, "Calls"): `setData`, data
 * attached to the user's current call (its phone events carry it as `USR_<key>` from then on, for
 * every party, and the screen pop of whoever gets the call next), and `originate`, xuc's `originate`
 * (XiVO's CTI server's: the user's phone is rung, then the destination is called from it, as
 * `dial` does, with no variables: `cti.js` sends none).
 */
import * as z from "zod";
import { userCall } from "../calls/user_calls.ts";
import { badRequest, callVariables, dialOf, readyToDial } from "../dial.ts";
import { ctiCommand, type CtiFamily } from "./command_set.ts";

/** The ACLs of these commands. */
export const PBX_COMMAND_ACLS = {
  /** The call daemon's on the user's own call (`alias.ctiuser` holds `calld.users.me.#`). */
  setData: "calld.users.me.calls.{call_id}.data.update",
  /** As `dial`'s: `POST /dial/number/{me}`. */
  originate: "svc.rest.dial.number.{username}.create",
} as const;

export const PBX_COMMAND_FAMILY: CtiFamily = {
  commands: {
    setData: ctiCommand({
      fields: () =>
        z.object({
          // checked as a dial's variables (lib/dial.ts): the same limits, the same messages
          variables: z.unknown(),
          uniqueId: z.string().min(1).max(256).optional(),
        }),
      acl: null, // the call's, once it is known
      async run(c, { variables, uniqueId }) {
        if (variables === undefined) throw badRequest("field variables: required");
        const attached = callVariables(variables);
        const { platform } = c.services;
        const call = await userCall(platform, c.user.id, uniqueId, ["talking", "held", "ringing"]);
        c.authorize(PBX_COMMAND_ACLS.setData, { call_id: call.callId });
        if (Object.keys(attached).length === 0) return;
        await platform.callCommand(call.callId, { kind: "attach", variables: attached });
      },
    }),
    originate: ctiCommand({
      fields: () => z.object({ destination: z.unknown() }),
      acl: PBX_COMMAND_ACLS.originate,
      async run(c, { destination }) {
        const dial = dialOf.number({ destination });
        await readyToDial(c.services, c.user);
        await dial(c.services, c.user);
      },
    }),
  },
};
