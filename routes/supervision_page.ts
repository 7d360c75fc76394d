/**
 * `GET /supervision`: the supervisor's wallboard (docs/supervision.md, "The page"), a page of
 * plain DOM and CSS whose files are embedded in the server (`web/supervision/assets.ts`), so the
 * sources, `deno compile`, the bundle and Deno Deploy serve it alike, with no CDN. No token is
 * needed to load it: it signs in through the 2.0 API (`/auth/login`, or the single sign-on set up,
 * which the server writes in its `data-sso`) and follows the figures over the CTI WebSocket.
 */
import { Hono } from "hono";
import type { Config } from "../lib/config.ts";
import { ApiError } from "../lib/errors.ts";
import type { AppEnv } from "../lib/http.ts";
import { operation } from "../lib/openapi/operation.ts";
import { SUPERVISION_FILES, SUPERVISION_PAGE } from "../web/supervision/assets.ts";

/** The single sign-on a page offers, as its `data-sso` holds it. */
export interface PageSso {
  /** The CAS server's base URL (the page sends the browser to its `/login`), or null. */
  cas: string | null;
  /** Whether Kerberos (`GET /auth/sso` with `Negotiate`) is set up. */
  kerberos: boolean;
}

/** The single sign-on of `config` the page can use (OpenID Connect needs a client of its own). */
export const pageSso = (config: Pick<Config, "casUrl" | "krb5Keytab">): PageSso => ({
  cas: config.casUrl,
  kerberos: config.krb5Keytab !== null,
});

/** `text` fit for a double-quoted HTML attribute. */
const attribute = (text: string) =>
  text.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;");

const SSO_SLOT = 'data-sso="{}"';

/** The page with `sso` in its `data-sso`. */
export function supervisionPage(sso: PageSso): string {
  if (!SUPERVISION_PAGE.includes(SSO_SLOT)) throw new Error(`the page has no ${SSO_SLOT}`);
  return SUPERVISION_PAGE.replace(SSO_SLOT, `data-sso="${attribute(JSON.stringify(sso))}"`);
}

/**
 * What the page may load and where it may connect: its own origin only (its files, the 2.0 API,
 * the CTI WebSocket; CSP 3's `'self'` takes `ws:`/`wss:` of the same host), and no framing: it
 * holds a supervisor's token.
 */
const HEADERS = {
  "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; base-uri 'none'; " +
    "form-action 'self'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  // small files: the browser asks again each time, so a new version never meets an old script
  "Cache-Control": "no-cache",
};

/** A file by name, never a property every object has (`constructor`, `__proto__`…). */
const fileOf = (name: string) =>
  Object.hasOwn(SUPERVISION_FILES, name) ? SUPERVISION_FILES[name] : undefined;

/** The routes of the page and its files; `config` tells which single sign-on it offers. */
export function supervisionPageRoutes(config: Pick<Config, "casUrl" | "krb5Keytab">) {
  const page = supervisionPage(pageSso(config));
  return new Hono<AppEnv>()
    .get(
      "/supervision",
      operation(() => ({
        summary: "The supervisor's wallboard, a page to open in a browser",
        description: "Signs in as a supervisor (a CTI user whose `supervision_enabled` is true) " +
          "and shows the queues, the agents and the calls waiting, live over the CTI channel.",
        responses: { 200: { mediaType: "text/html", description: "The page" } },
      }), (c) => c.html(page, 200, HEADERS)),
    )
    .get(
      "/supervision/:file",
      operation((z) => ({
        summary: "A file of the supervisor's wallboard (its script and style sheet)",
        params: {
          file: z.string().meta({ examples: Object.keys(SUPERVISION_FILES) }),
        },
        responses: { 200: { mediaType: "*/*", description: "The file" } },
        errors: { 404: "`NotFound`: no such file" },
      }), (c) => {
        const name = c.req.param("file") ?? "";
        const file = fileOf(name);
        if (!file) throw new ApiError(404, "NotFound", `no file ${name} in the supervision page`);
        return c.body(file.text, 200, { ...HEADERS, "Content-Type": file.type });
      }),
    );
}
