/**
 * The API areas' routes: the 2.0 and 1.0 APIs, the configuration daemon (1.1), the agent, call and
 * token daemons. Most of the app's code: the server loads this module by `import()` at its first
 * request that needs it (`serverApp`, routes/app.ts), so that a start neither reads nor compiles it (the
 * bundle holds it in a file of its own, docs/performance.md); the tests' app (`createApp`,
 * routes/mod.ts) imports it with the rest.
 */
import { Hono } from "hono";
import { type AppEnv, BODY_METHODS, limitBody, MiB } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";
import { agentdMeRoutes, agentdRoutes, agentdStatusRoutes } from "../daemons/agentd/mod.ts";
import { calldRoutes } from "../daemons/calld/mod.ts";
import { confdRoutes } from "../daemons/confd/mod.ts";
import { legacyRoutes } from "../legacy/mod.ts";
import { authRoutes } from "./auth.ts";
import { callbackRoutes } from "./callbacks.ts";
import { callQualificationRoutes } from "./call_qualifications.ts";
import { contactRoutes } from "./contacts.ts";
import { ctiRoutes } from "./cti.ts";
import { dialRoutes } from "./dial.ts";
import { dndRoutes } from "./dnd.ts";
import { eventRoutes } from "./events.ts";
import { forwardRoutes } from "./forwards.ts";
import { historyRoutes } from "./history.ts";
import { meetingRoomRoutes } from "./meetingrooms.ts";
import { mobilePushRoutes } from "./mobile_push.ts";
import { presenceRoutes } from "./presences.ts";
import { rightsRoutes } from "./rights.ts";
import { simRoutes } from "./sim.ts";
import { supervisionRoutes } from "./supervision.ts";
import { xivoAuthRoutes } from "./xivo_auth.ts";

/** The 2.0 routes that take a CSV file. */
const CSV_IMPORTS = ["/contact/import/personal", "/callback_lists/callback_requests/csv"];

/** The 2.0 API's routes (below `API_V2`). */
function apiV2Routes(services: Services) {
  const v2 = new Hono<AppEnv>();
  // a CSV import may be up to 10 MiB (decisions §3, §11); every other body 1 MiB
  v2.on(
    BODY_METHODS,
    "*",
    limitBody((c) => CSV_IMPORTS.some((path) => c.req.path.endsWith(path)) ? 10 * MiB : MiB),
  );
  const areas = [
    authRoutes,
    contactRoutes,
    callQualificationRoutes,
    mobilePushRoutes,
    dialRoutes,
    dndRoutes,
    forwardRoutes,
    historyRoutes,
    callbackRoutes,
    eventRoutes,
    ctiRoutes,
    supervisionRoutes,
    rightsRoutes,
    presenceRoutes,
    meetingRoomRoutes,
  ];
  for (const routes of areas) v2.route("/", routes(services));
  // the control API of the simulator; on a real PBX people pick up their phones
  if (services.sim) v2.route("/", simRoutes(services.sim, services));
  return v2;
}

/** Each area's routes, as the app mounts them (routes/app.ts). */
export const areaRoutes = {
  apiV2: apiV2Routes,
  apiV1: legacyRoutes,
  confd: confdRoutes,
  agentd: agentdRoutes,
  agentdMe: agentdMeRoutes,
  agentdStatus: agentdStatusRoutes,
  calld: calldRoutes,
  xivoAuth: xivoAuthRoutes,
};

export type AreaRoutes = typeof areaRoutes;
