/**
 * Swagger UI's files, from the npm package `swagger-ui-dist`, embedded as text: the docs page works
 * with no internet access, from the sources, `deno compile` and the bundle alike. Imported on the
 * first request of `/docs` only (`routes/docs_page.ts`), so that a server nobody reads the docs of
 * never loads them.
 */
import bundle from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "text" };
import bundleLicenses from "swagger-ui-dist/swagger-ui-bundle.js.LICENSE.txt" with { type: "text" };
import css from "swagger-ui-dist/swagger-ui.css" with { type: "text" };
import license from "swagger-ui-dist/LICENSE" with { type: "text" };

/** File name below `/docs/` → its media type and text. */
export const SWAGGER_UI_FILES: Record<string, { type: string; text: string }> = {
  "swagger-ui-bundle.js": { type: "text/javascript; charset=utf-8", text: bundle },
  "swagger-ui-bundle.js.LICENSE.txt": { type: "text/plain; charset=utf-8", text: bundleLicenses },
  "swagger-ui.css": { type: "text/css; charset=utf-8", text: css },
  "LICENSE": { type: "text/plain; charset=utf-8", text: license },
};
