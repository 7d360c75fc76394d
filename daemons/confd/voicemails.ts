/** PLACEHOLDER: being written; replaced whole by its owner. */
import { Hono } from "hono";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";

export function voicemailRoutes(_services: Services) {
  return new Hono<AppEnv>();
}
