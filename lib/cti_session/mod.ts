/**
 * The CTI session's own messages (docs/cti.md, "Keeping the session alive"): what a socket is sent
 * once open besides the hub's greeting, as xuc sends it at sign-in: the user's line (`LineConfig`,
 * line_config.ts; sent again when it changes, by the hub's refresh) and rights profile
 * (`RightProfile`, right_profile.ts; sent again when it changes, from the notice its change writes,
 * which also has what the socket follows in supervision filtered anew at once). The token's renewal (`AuthenticationToken`,
 * token_renewal.ts) is the hub's, and the agent commands' `AgentError` is agent_error.ts.
 */
import type { CtiFamily } from "../cti/command_set.ts";
import { lineConfigMessage, lineConfigOf } from "./line_config.ts";
import { rightProfileMessage, rightProfileOf } from "./right_profile.ts";

export const sessionFamily: CtiFamily = {
  commands: {},
  async greet({ services, session, user, reply }) {
    const line = JSON.stringify(lineConfigMessage(await lineConfigOf(services.store, user)));
    session.user.lineConfig = line; // what the hub's refresh compares the line with
    session.sendText(line);
    reply(rightProfileMessage(await rightProfileOf(services.store, user.id)));
  },
  notices: {
    RightProfile(services, sessions, notice) {
      const text = JSON.stringify(notice.message);
      for (const session of sessions) session.sendText(text);
      services.cti.supervision.changed(); // what the sockets follow, filtered by the new profile
    },
  },
};
