/**
 * The supervisor's wallboard (`GET /supervision`, routes/supervision_page.ts): its files, embedded
 * as text so that the sources, `deno compile`, the bundle and Deno Deploy serve the same page with
 * nothing else to install and no CDN. Plain DOM and CSS, no library (docs/supervision.md, "The
 * page").
 */
import app from "./app.js" with { type: "text" };
import model from "./model.js" with { type: "text" };
import page from "./index.html" with { type: "text" };
import style from "./style.css" with { type: "text" };

/** The page itself; the server fills its `data-sso` with the single sign-on set up. */
export const SUPERVISION_PAGE: string = page;

/** The page's files, by name below `/supervision/`. */
export const SUPERVISION_FILES: Record<string, { type: string; text: string }> = {
  "app.js": { type: "text/javascript; charset=utf-8", text: app },
  "model.js": { type: "text/javascript; charset=utf-8", text: model },
  "style.css": { type: "text/css; charset=utf-8", text: style },
};
