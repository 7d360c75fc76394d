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
import type { DocsFile } from "./docs_file.ts";
import { OPENAPI_PATH } from "./openapi_paths.ts";

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

/**
 * Starts a file's `text` that holds the base64 of its gzip bytes (`tools/finish_bundle.ts` stores
 * the large Swagger UI files so in the bundle): no JavaScript or CSS file starts with NUL.
 */
export const GZIP_MARK = "\u0000gzip-base64:";

const OWN_FILES: Record<string, DocsFile> = {
  "start.js": { type: "text/javascript; charset=utf-8", text: START },
};

/** Swagger UI's files, loaded on first use (about 2 MB). */
const swaggerUi = (() => {
  let loading: Promise<Record<string, DocsFile>> | undefined;
  return () => loading ??= import("./docs_assets.ts").then((m) => m.SWAGGER_UI_FILES);
})();

/** A file by name, never a property every object has (`constructor`, `__proto__`…). */
const ownFile = (files: Record<string, DocsFile>, name: string) =>
  Object.hasOwn(files, name) ? files[name] : undefined;

/** Whether an `Accept-Encoding` value takes gzip (by name or `*`, with a weight above 0). */
export function acceptsGzip(header: string | undefined): boolean {
  let gzip: number | null = null;
  let any: number | null = null;
  for (const part of (header ?? "").split(",")) {
    const [coding = "", ...params] = part.split(";").map((piece) => piece.trim().toLowerCase());
    const q = params.find((param) => param.startsWith("q="));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    if (coding === "gzip" || coding === "x-gzip") gzip = weight;
    else if (coding === "*") any = weight;
  }
  const weight = gzip ?? any ?? 0;
  return weight > 0; // NaN (a malformed weight) is not above 0
}

/** The gzip bytes of files stored gzipped, decoded once each. */
const gzipBytes = new WeakMap<DocsFile, Uint8Array<ArrayBuffer>>();

/** A file's body and the headers it needs: gzipped files as they are, when the client takes gzip. */
async function fileBody(file: DocsFile, acceptEncoding: string | undefined) {
  if (!file.text.startsWith(GZIP_MARK)) return { body: file.text, headers: {} };
  let bytes = gzipBytes.get(file);
  if (!bytes) {
    bytes = Uint8Array.fromBase64(file.text.slice(GZIP_MARK.length));
    gzipBytes.set(file, bytes);
  }
  const vary = { Vary: "Accept-Encoding" };
  if (acceptsGzip(acceptEncoding)) {
    return { body: bytes, headers: { ...vary, "Content-Encoding": "gzip" } };
  }
  const plain = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return { body: await new Response(plain).text(), headers: vary };
}

const ASSETS = ["start.js", "swagger-ui-bundle.js", "swagger-ui.css", "LICENSE"] as const;

/** The routes; `files`: Swagger UI's files (the tests give some stored gzipped). */
export function docsPageRoutes(files: () => Promise<Record<string, DocsFile>> = swaggerUi) {
  return new Hono<AppEnv>()
    .get(
      "/docs",
      operation(() => ({
        summary: "This documentation, to read and try the API in a browser",
        responses: { 200: { mediaType: "text/html", description: "Swagger UI's page" } },
      }), (c) => c.html(PAGE)),
    )
    .get(
      "/docs/:asset",
      operation((z) => ({
        summary: "A file of the documentation page (Swagger UI's, served from its npm package)",
        params: { asset: z.string().meta({ examples: [...ASSETS] }) },
        responses: { 200: { mediaType: "*/*", description: "The file" } },
        errors: { 404: "`NotFound`: no such file" },
      }), async (c) => {
        const name = c.req.param("asset") ?? "";
        const file = ownFile(OWN_FILES, name) ?? ownFile(await files(), name);
        if (!file) throw new ApiError(404, "NotFound", `no file ${name} in the docs`);
        const { body, headers } = await fileBody(file, c.req.header("accept-encoding"));
        return c.body(body, 200, {
          "Content-Type": file.type,
          "Cache-Control": "public, max-age=3600",
          ...headers,
        });
      }),
    );
}
