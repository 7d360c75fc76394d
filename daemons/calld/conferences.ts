/**
 * The call daemon's ad-hoc conferences (docs/calls.md), a user's own: started from one of its
 * calls with the peers of its calls, grown, shrunk (a member removed is hung up) and ended. A
 * conference's id is its host's `call_id`.
 */
import { type Context, Hono } from "hono";
import * as z from "zod";
import { liveCall, ownCall, ownConference } from "../../lib/calls/user_calls.ts";
import type { AppEnv } from "../../lib/http.ts";
import { operation } from "../../lib/openapi/operation.ts";
import type { Services } from "../../lib/services.ts";
import { ADHOC_REQUEST, readBody } from "./body.ts";
import { refused } from "./errors.ts";
import { calldAcl } from "./guard.ts";

const tokenUser = (c: Context<AppEnv>) => Number(c.get("identity").userId);

const NOT_PEER = [400, "host-call-creation-error", "Adhoc conference creation error"] as const;
const PARTICIPANT = {
  no_call: [400, "participant-call-not-found", "Adhoc conference participant call not found"],
  in_conference: [
    409,
    "participant-already-in-conference",
    "Adhoc conference error: participant already in conference",
  ],
  not_peer: NOT_PEER,
} as const;

export function conferenceRoutes(services: Services): Hono<AppEnv> {
  const { tokens, platform } = services;
  const app = new Hono<AppEnv>();
  const base = "/users/me/conferences/adhoc";
  const own = (c: Context<AppEnv>) => {
    const id = c.req.param("conference_id")!;
    return refused(() => ownConference(platform, tokenUser(c), id), { adhoc_conference_id: id });
  };

  app.post(
    base,
    calldAcl(tokens, "calld.users.me.conferences.adhoc.create", { me: true }),
    operation(() => ({
      summary: "Merges one of the user's calls and the peers of its calls into a conference",
      body: ADHOC_REQUEST,
      // built on first use (`z.lazy`), not at every start (docs/performance.md)
      responses: { 201: z.object({ conference_id: z.string() }) },
      errors: {
        400: "`invalid-data`, `host-call-not-found`, `participant-call-not-found` or " +
          "`host-call-creation-error` (a participant is not the peer of the user's calls)",
        409: "`host-already-in-conference` or `participant-already-in-conference`",
      },
    }), async (c) => {
      const { host_call_id: host, participant_call_ids: participants } = await readBody(
        c,
        ADHOC_REQUEST,
      );
      const hostNotFound = [
        400,
        "host-call-not-found",
        "Adhoc conference creation error: host call not found",
      ] as const;
      await refused(() => ownCall(platform, tokenUser(c), host), { host_call_id: host }, {
        no_call: hostNotFound,
        not_yours: hostNotFound,
      });
      for (const id of participants) {
        await refused(() => liveCall(platform, id), { participant_call_id: id }, PARTICIPANT);
      }
      const conference = await refused(
        () => platform.startConference(host, participants),
        { host_call_id: host },
        {
          in_conference: [
            409,
            "host-already-in-conference",
            "Adhoc conference creation error: host already in conference",
          ],
          not_peer: NOT_PEER,
          not_talking: NOT_PEER,
          no_call: [
            400,
            "host-call-creation-error",
            "Adhoc conference creation error: a call was hung up",
          ],
        },
      );
      return c.json({ conference_id: conference.id }, 201);
    }),
  );
  app.delete(
    `${base}/:conference_id`,
    calldAcl(tokens, "calld.users.me.conferences.adhoc.delete", { me: true }),
    operation(() => ({
      summary: "Ends one of the user's conferences: every member is hung up",
      responses: { 204: null },
      errors: { 404: "`adhoc-conference-not-found` (or another user's)" },
    }), async (c) => {
      const { id } = await own(c);
      await refused(() => platform.endConference(id), { adhoc_conference_id: id });
      return c.body(null, 204);
    }),
  );
  app.put(
    `${base}/:conference_id/participants/:call_id`,
    calldAcl(tokens, "calld.users.me.conferences.adhoc.participants.update", { me: true }),
    operation(() => ({
      summary: "Adds the peer of one of the user's calls to one of its conferences",
      responses: { 204: null },
      errors: {
        400: "`participant-call-not-found`, or `host-call-creation-error`: not a peer of the user",
        404: "`adhoc-conference-not-found`",
        409: "`participant-already-in-conference`",
      },
    }), async (c) => {
      const { id } = await own(c);
      const callId = c.req.param("call_id")!;
      await refused(() => liveCall(platform, callId), { participant_call_id: callId }, PARTICIPANT);
      await refused(
        () => platform.addToConference(id, callId),
        { participant_call_id: callId },
        PARTICIPANT,
      );
      return c.body(null, 204);
    }),
  );
  app.delete(
    `${base}/:conference_id/participants/:call_id`,
    calldAcl(tokens, "calld.users.me.conferences.adhoc.participants.delete", { me: true }),
    operation(() => ({
      summary: "Hangs up a member of one of the user's conferences (the host: all of them)",
      responses: { 204: null },
      errors: {
        400: "`participant-call-not-found`: no member of that conference",
        404: "`adhoc-conference-not-found`",
      },
    }), async (c) => {
      const { id } = await own(c);
      const callId = c.req.param("call_id")!;
      await refused(
        () => platform.removeFromConference(id, callId),
        { participant_call_id: callId },
        PARTICIPANT,
      );
      return c.body(null, 204);
    }),
  );
  return app;
}
