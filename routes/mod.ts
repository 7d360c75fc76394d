/** The app with every API area declared at once: what the tests and the tools build. */
import type { Services } from "../lib/services.ts";
import { buildApp } from "./app.ts";
import { areaRoutes } from "./areas.ts";

export { API_V1, API_V2 } from "./app.ts";

/**
 * Builds the app for `services`, every area declared at once; tests call it directly through
 * `app.request()`. The server builds `serverApp` (routes/app.ts) instead.
 *
 * @example
 * const app = createApp(await createServices(loadConfig({ SVC_KV: ":memory:" })));
 */
export function createApp(services: Services) {
  return buildApp(services, { now: areaRoutes });
}
