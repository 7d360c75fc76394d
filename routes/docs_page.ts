/**
 * `GET /docs`: the API's documentation page, Swagger UI reading the whole OpenAPI document
 * (`routes/openapi.ts`), with "Try it out" against this same server. Every file it loads is
 * served here (`GET /docs/{asset}`, from the npm package `swagger-ui-dist`): no CDN, no call
 * leaves the server's origin (Swagger UI's online validator is turned off). No token is needed
 * to read it; a call tried from it needs one as any other (its "Authorize" button takes it).
 */
import { Hono } from "hono";
import { ApiError } from "../lib/errors.ts";
import type { AppEnv } from "../lib/http.ts";
import { operation } from "../lib/openapi/operation.ts";
import { OPENAPI_PATH } from "./openapi.ts";
import * as z from "zod";

/** The page: Swagger UI's files and our start script, nothing inline. */
const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>svc API</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/start.js"></script>
</body>
</html>
`;

/** Starts Swagger UI on the document; `validatorUrl: null` keeps it from calling its website. */
const START = `window.ui = SwaggerUIBundle({
  url: ${JSON.stringify(OPENAPI_PATH)},
  dom_id: "#swagger-ui",
  deepLinking: true,
  docExpansion: "list",
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
`;

const OWN_FILES: Record<string, { type: string; text: string }> = {
  "start.js": { type: "text/javascript; charset=utf-8", text: START },
};

/** Swagger UI's files, loaded on first use (about 2 MB). */
const swaggerUi = (() => {
  let loading: Promise<Record<string, { type: string; text: string }>> | undefined;
  return () => loading ??= import("./docs_assets.ts").then((m) => m.SWAGGER_UI_FILES);
})();

/** A file by name, never a property every object has (`constructor`, `__proto__`…). */
const ownFile = (files: Record<string, { type: string; text: string }>, name: string) =>
  Object.hasOwn(files, name) ? files[name] : undefined;

const ASSETS = ["start.js", "swagger-ui-bundle.js", "swagger-ui.css", "LICENSE"] as const;

export function docsPageRoutes() {
  return new Hono<AppEnv>()
    .get(
      "/docs",
      operation({
        summary: "This documentation, to read and try the API in a browser",
        responses: { 200: { mediaType: "text/html", description: "Swagger UI's page" } },
      }, (c) => c.html(PAGE)),
    )
    .get(
      "/docs/:asset",
      operation({
        summary: "A file of the documentation page (Swagger UI's, served from its npm package)",
        params: { asset: z.string().meta({ examples: [...ASSETS] }) },
        responses: { 200: { mediaType: "*/*", description: "The file" } },
        errors: { 404: "`NotFound`: no such file" },
      }, async (c) => {
        const name = c.req.param("asset") ?? "";
        const file = ownFile(OWN_FILES, name) ?? ownFile(await swaggerUi(), name);
        if (!file) throw new ApiError(404, "NotFound", `no file ${name} in the docs`);
        return c.body(file.text, 200, {
          "Content-Type": file.type,
          "Cache-Control": "public, max-age=3600",
        });
      }),
    );
}
