/** The configuration daemon, API 1.1, mounted at `/1.1` (decisions §10). */
import { Hono } from "hono";
import { type AppEnv, BODY_METHODS, limitBody, MiB } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import { userCsvRoutes } from "./users_csv.ts";
import { jobRoutes } from "./jobs.ts";
import { userRoutes } from "./users.ts";
import { conferenceRoutes } from "./conferences.ts";
import { meetingRoutes } from "./meetings.ts";
import { pushTokenRoutes } from "./push_tokens.ts";
import { lineRoutes } from "./lines.ts";
import { endpointRoutes } from "./endpoints.ts";
import { deviceRoutes } from "./devices.ts";
import { extensionRoutes } from "./extensions.ts";
import { voicemailRoutes } from "./voicemails.ts";
import { callPermissionRoutes } from "./callpermissions.ts";
import { entityRoutes } from "./entities.ts";
import { labelRoutes } from "./labels.ts";
import { switchboardRoutes } from "./switchboards.ts";
import { agentRoutes } from "./agents.ts";
import { agentGroupRoutes } from "./agent_groups.ts";
import { userAgentRoutes } from "./user_agents.ts";
import { queueRoutes } from "./queues.ts";
import { webServiceUserRoutes } from "./webservice_users.ts";
import { callQualificationRoutes } from "./call_qualifications.ts";
import { callbackListRoutes } from "./callback_lists.ts";
import { wizardRoutes } from "./wizard.ts";
import { contextResource } from "./contexts.ts";
import { resourceRoutes } from "./crud.ts";
import { confdErrorHandler } from "./errors.ts";

/** Imports of CSV files may be up to 10 MiB (decisions §11); any other body 1 MiB. */
const bodyLimit = (path: string) => path.endsWith("/import") ? 10 * MiB : MiB;

/** Modules in the order their routes are matched: fixed paths before `/{id}` ones. */
const areas = [
  userCsvRoutes,
  // `/users/me/meetings…` before the users' `/users/{id}…`
  meetingRoutes,
  conferenceRoutes,
  userRoutes,
  pushTokenRoutes,
  lineRoutes,
  endpointRoutes,
  deviceRoutes,
  extensionRoutes,
  voicemailRoutes,
  callPermissionRoutes,
  entityRoutes,
  labelRoutes,
  switchboardRoutes,
  agentRoutes,
  agentGroupRoutes,
  userAgentRoutes,
  queueRoutes,
  webServiceUserRoutes,
  callQualificationRoutes,
  callbackListRoutes,
  wizardRoutes,
  jobRoutes,
];

export function confdRoutes(services: Services) {
  const app = new Hono<AppEnv>();
  app.on(BODY_METHODS, "*", limitBody((c) => bodyLimit(c.req.path)));
  for (const routes of areas) app.route("/", routes(services));
  app.route("/", resourceRoutes(services, contextResource));
  app.onError(confdErrorHandler(services.logger));
  return app;
}
