/**
 * Swagger UI's files, from the npm package `swagger-ui-dist`, embedded as text: the docs page works
 * with no internet access, from the sources, `deno compile` and the bundle alike. Imported on the
 * first request of `/docs` only (`routes/docs_page.ts`), so that a server nobody reads the docs of
 * never loads them.
 *
 * In the bundle, `tools/finish_bundle.ts` stores the two large ones gzipped, as `GZIP_MARK`
 * followed by the base64 of the gzip bytes: 0.65 MB of the bundle's source instead of 1.9 MB,
 * which V8 holds in memory from the start whether or not anyone reads the docs (2.4 MB less idle
 * RSS, bench/README.md). The page (`routes/docs_page.ts`) serves those bytes as they are to a
 * browser that accepts gzip.
 */
import bundle from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "text" };
import bundleLicenses from "swagger-ui-dist/swagger-ui-bundle.js.LICENSE.txt" with { type: "text" };
import css from "swagger-ui-dist/swagger-ui.css" with { type: "text" };
import license from "swagger-ui-dist/LICENSE" with { type: "text" };
import type { DocsFile } from "./docs_file.ts";

/** File name below `/docs/` → the file. */
export const SWAGGER_UI_FILES: Record<string, DocsFile> = {
  "swagger-ui-bundle.js": { type: "text/javascript; charset=utf-8", text: bundle },
  "swagger-ui-bundle.js.LICENSE.txt": { type: "text/plain; charset=utf-8", text: bundleLicenses },
  "swagger-ui.css": { type: "text/css; charset=utf-8", text: css },
  "LICENSE": { type: "text/plain; charset=utf-8", text: license },
};
