/**
 * The OpenAPI 3.1 document of the whole app (docs/openapi.md), generated from the app's route
 * table on first request and kept: `GET /svc/api/2.0/openapi.json` (every area), and, as the
 * daemons svc stands in for serve theirs, `GET /1.1/api/api.yml` (the configuration daemon),
 * `GET /api/api.yml` (the agent daemon, whose clients' base is svc's root) and
 * `GET /0.1/api/api.yml` (xivo-auth), each a YAML document of its area's paths relative to its
 * base. No token: the document says what exists, not what anyone holds.
 */
import { Hono } from "hono";
import type { AppEnv } from "../lib/http.ts";
import type { RouteEntry } from "../lib/openapi/generate.ts";
import { operation } from "../lib/openapi/operation.ts";
import { AREA_DOCUMENTS, OPENAPI_PATH } from "./openapi_paths.ts";

/** What `make` answers, made once, on first request, then kept. */
function kept<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => made ??= make();
}

/**
 * The document routes of the app whose route table `routes()` answers (read on first request,
 * once every route is mounted). The generator, the areas' error bodies and zod are loaded by the
 * first request of a document, not at start (docs/performance.md).
 */
export function openApiRoutes(routes: () => readonly RouteEntry[]) {
  const generator = kept(() => import("./openapi_document.ts"));
  const whole = kept(async () => (await generator()).appDocument(routes()));
  const json = kept(async () => JSON.stringify(await whole()));
  const app = new Hono<AppEnv>().get(
    OPENAPI_PATH,
    operation(
      () => ({
        summary: "The OpenAPI 3.1 document of every area",
        responses: { 200: { mediaType: "application/json", description: "The document" } },
      }),
      async (c) => c.body(await json(), 200, { "Content-Type": "application/json; charset=utf-8" }),
    ),
  );
  for (const area of AREA_DOCUMENTS) {
    // no anchors and aliases: each part written out, as other readers expect; the YAML library
    // is loaded by the first request of such a document, not at start
    const yamlText = kept(async () => {
      const [{ dump }, { areaDocument }] = await Promise.all([import("js-yaml"), generator()]);
      return dump(areaDocument(await whole(), area), { noRefs: true, lineWidth: -1 });
    });
    app.get(
      area.path,
      operation(
        () => ({
          summary: `The OpenAPI 3.1 document of the ${area.tag.replace(/ \(.*\)$/, "")}, in YAML`,
          description:
            `Its paths are relative to \`${area.base}\`, as the daemon's own document's are.`,
          responses: { 200: { mediaType: "application/yaml", description: "The document" } },
        }),
        async (c) =>
          c.body(await yamlText(), 200, { "Content-Type": "application/yaml; charset=utf-8" }),
      ),
    );
  }
  return app;
}
