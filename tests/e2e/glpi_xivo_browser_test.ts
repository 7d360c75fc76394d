/**
 * The GLPI "xivo" plugin's browser page against svc (docs/clients.md), in headless Chromium: the
 * plugin's own JavaScript, unchanged (`js/xuc.js`, `js/xivo/cti.js`, `callback.js`,
 * `membership.js`, `store2.min.js`), on a tiny host page of ours that sets what GLPI's PHP page
 * sets (`CFG_GLPI`, `GLPI_PLUGINS_PATH`, `xivo_config`, the elements the plugin hangs its panel on)
 * and answers the plugin's `ajax/xuc.php` as the PHP side would (its forms, a GLPI user's phone).
 * svc runs with `SVC_XUC_PATHS=true` (the plugin builds `<xuc_url>/xuc/api/2.0/…`) and the page's
 * origin in `SVC_CORS_ORIGINS`. It checks: sign-in, click-to-call, hang-up, answer; and reports
 * what the page shows of the transfer button, the user status list and the caller's name.
 *
 * The plugin (GPLv3) is not in this repository: the test skips with a notice unless
 * `SVC_TEST_GLPI_XIVO` names a checkout or export of it, e.g.
 * `mkdir /tmp/glpi-xivo && git -C <pluginsGLPI/xivo checkout> archive HEAD | tar -x -C /tmp/glpi-xivo`.
 */
import assert from "node:assert/strict";
import jquery from "jquery/dist/jquery.min.js" with { type: "text" };
import { DEMO_WEBSERVICE_USER } from "../../lib/demo.ts";
import { ensureDebianPackages, skipWithoutPackages } from "../peers/debian.ts";
import { CHROMIUM_WHY, openTab, untilPage, withChromium, withDemoBehind } from "./chromium.ts";

const PLUGIN = Deno.env.get("SVC_TEST_GLPI_XIVO");
const noChromium = await skipWithoutPackages(["chromium"], CHROMIUM_WHY);
if (!PLUGIN) {
  console.log(
    "SVC_TEST_GLPI_XIVO names no checkout of the GLPI xivo plugin: its page's test is skipped",
  );
}

/** The plugin's scripts, in the order its `setup.php` adds them (app.js.php aside). */
const PLUGIN_SCRIPTS = [
  "js/xivo/callback.js",
  "js/xivo/membership.js",
  "js/xivo/cti.js",
  "js/store2.min.js",
  "js/xuc.js",
];

/** The host page: GLPI's globals, the elements the plugin uses, its scripts, then app.js.php's start. */
function hostPage(svcUrl: string): string {
  const config = {
    xuc_url: svcUrl,
    xuc_secure: 0,
    enable_click2call: 1,
    enable_presence: 1,
    enable_callcenter: 1,
    enable_auto_open: 0,
    xuc_local_store: 0,
  };
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>GLPI with the xivo plugin (test host)</title>
<script>
var CFG_GLPI = { root_doc: "" };
var GLPI_PLUGINS_PATH = { xivo: "plugins/xivo", mreporting: "plugins/xivo" };
var xivo_config = ${JSON.stringify(config)};
</script>
<script src="/jquery.js"></script>
<script>$.fn.select2 = function () { return this; }; // GLPI ships select2; the widget is not tested</script>
${PLUGIN_SCRIPTS.map((path) => `<script src="/plugins/xivo/${path}"></script>`).join("\n")}
<script>
$(function () {
  xuc_obj = new Xuc();
  xuc_obj.init(xivo_config);
  xuc_obj.click2Call();
});
</script>
</head><body>
<div id="c_preference"><ul><li id="preferences_link">Preferences</li></ul></div>
<div id="page"><a id="tooltiplink42" href="/front/user.form.php?id=2">Bob Durand</a></div>
</body></html>`;
}

/** What GLPI's `ajax/xuc.php` answers (its PHP side), with the element ids the plugin's JS uses. */
function ajaxAnswer(action: string | null): Response {
  const html = (body: string) =>
    new Response(body, { headers: { "Content-Type": "text/html; charset=utf-8" } });
  switch (action) {
    case "get_login_form":
      return html(`<form id="xuc_login_form">
  <input type="text" id="xuc_username"><input type="password" id="xuc_password">
  <input type="text" id="xuc_phoneNumber"><input type="submit" id="xuc_sign_in" value="Connect">
  <div id="xuc_message"></div></form>`);
    case "get_logged_form":
      return html(`<form id="xuc_logged_form"><i id="xuc_sign_out"></i>
  <div id="xuc_fullname"></div><select id="xuc_user_status"></select>
  <input type="text" id="xuc_phone_status" readonly></form>
<div id="xuc_call_informations"><h2 id="xuc_call_titles"><div id="xuc_ringing_title">Incoming</div>
  <div id="xuc_oncall_title">On call</div><div id="xuc_dialing_title">Dialing</div></h2>
  <span id="xuc_caller_num"></span><div id="xuc_caller_infos"></div>
  <div id="auto_actions"><i id="xuc_answer">answer</i><i id="xuc_hangup">hangup</i>
  <i id="xuc_hold">hold</i></div></div>
<div id="xuc_call_actions"><input type="text" id="dial_phone_num">
  <input type="text" id="transfer_phone_num"><i id="xuc_dial">dial</i>
  <i id="xuc_transfer">transfer</i></div>`);
    case "get_call_link": // the GLPI user 2, Bob, has phone 1002
      return Response.json({ phone: "1002", phone2: null, mobile: null, title: "Call Bob: 1002" });
    case "get_user_infos_by_phone":
      return Response.json({ users: [], tickets: [], redirect: false, message: null });
    default:
      return new Response("no such action", { status: 400 });
  }
}

/** Serves the host page, jQuery, the plugin's files from `plugin` and its ajax endpoint. */
function serveGlpi(plugin: string, svcUrl: () => string) {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const url = new URL(request.url);
    const script = (body: string) =>
      new Response(body, { headers: { "Content-Type": "text/javascript; charset=utf-8" } });
    if (url.pathname === "/") {
      return new Response(hostPage(svcUrl()), {
        headers: { "Content-Type": "text/html; charset=utf-8" },
      });
    }
    if (url.pathname === "/jquery.js") return script(jquery);
    if (url.pathname === "/plugins/xivo/ajax/xuc.php") {
      const form = request.method === "POST"
        ? new URLSearchParams(await request.text())
        : url.searchParams;
      return ajaxAnswer(form.get("action"));
    }
    const path = url.pathname.replace(/^\/plugins\/xivo\//, "");
    if (PLUGIN_SCRIPTS.includes(path)) return script(await Deno.readTextFile(`${plugin}/${path}`));
    return new Response("not found", { status: 404 });
  });
}

/** The plugin's saved state (its session store's `xivo` entry): the last call event and caller. */
const SAVED = "(store.session.get('xivo') || {})";

Deno.test({
  name:
    "the GLPI xivo plugin's page on svc: sign-in, click-to-call, hang-up, answer; what else works",
  ignore: noChromium || !PLUGIN,
  async fn() {
    await ensureDebianPackages(["chromium"], CHROMIUM_WHY);
    let svcUrl = "";
    const pageServer = serveGlpi(PLUGIN!, () => svcUrl);
    await withDemoBehind(pageServer, {
      SVC_SIM_ANSWER_MS: "300",
      SVC_SIM_TALK_MS: "0",
      SVC_XUC_PATHS: "true",
    }, async (server, pageOrigin) => {
      svcUrl = server.baseUrl;
      /** svc's REST API as the demo's web service user (the simulator's control, a dial). */
      const wsToken = async () => {
        const response = await fetch(`${svcUrl}/svc/api/2.0/auth/webservice`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({
            login: DEMO_WEBSERVICE_USER.login,
            password: DEMO_WEBSERVICE_USER.password,
          }),
        });
        return (await response.json()).token as string;
      };
      await withChromium(async (devtools) => {
        const evaluate = await openTab(devtools, `${pageOrigin}/`);
        const state = async (expression: string) => await evaluate(expression);
        await untilPage(
          evaluate,
          "window.xuc_obj && $('#xivo_agent_button').length",
          "the panel",
        );
        // click-to-call icons come from the plugin's ajax lookup of the GLPI user's phone
        await untilPage(
          evaluate,
          "$('#page .xivo_callto_link').length",
          "a click-to-call icon",
        );

        // sign-in: the plugin's form, posted to /xuc/api/2.0/auth/login, then the socket
        await evaluate("$('#xivo_agent_button').click()");
        await untilPage(evaluate, "$('#xuc_username').length", "the login form");
        await evaluate(`$('#xuc_username').val('alice'); $('#xuc_password').val('alice-demo');
          $('#xuc_phoneNumber').val('1001'); $('#xuc_sign_in').click()`);
        await untilPage(
          evaluate,
          "$('#xuc_fullname').text() === 'Alice Martin'",
          "the user's name",
        );
        await untilPage(evaluate, "$('#xuc_phone_status').val() === '0'", "the phone's status");
        assert.match(String(await state(`${SAVED}.bearerToken`)), /^ey/);

        // click-to-call: the icon by the GLPI user dials bob's phone from alice's
        await evaluate("$('#page .xivo_callto_link').first().click()");
        await untilPage(evaluate, `${SAVED}.lastState === 'EventEstablished'`, "the call up");
        assert.equal(await state(`${SAVED}.callerNum`), "1002");
        // hang-up
        await evaluate("$('#xuc_hangup').click()");
        await untilPage(
          evaluate,
          `${SAVED}.lastState === 'EventReleased' || ${SAVED}.lastState === null`,
          "the call ended",
        );

        // answer: bob calls alice, whose phone now rings until answered
        const token = await wsToken();
        const api = (method: string, path: string, body: unknown) =>
          fetch(`${svcUrl}/svc/api/2.0${path}`, {
            method,
            headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
            body: JSON.stringify(body),
          });
        assert.equal(
          (await api("PUT", "/sim/phones/1001/policy", { policy: "manual" })).status,
          200,
        );
        // bob signed in (a dial is for a connected user), his phone calls alice
        const bobLogin = await fetch(`${svcUrl}/xuc/api/2.0/auth/login`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ login: "bob", password: "bob-demo" }),
        });
        assert.equal(bobLogin.status, 200);
        await bobLogin.body?.cancel();
        const dialed = await api("POST", "/dial/number/bob", { destination: "1001" });
        assert.equal(dialed.status, 200, await dialed.clone().text());
        await untilPage(
          evaluate,
          `${SAVED}.lastState === 'EventRinging'`,
          "alice's phone ringing",
        );
        const ringingName = await state(`${SAVED}.callerName`);
        assert.equal(await state(`${SAVED}.callerNum`), "1002");
        await evaluate("$('#xuc_answer').click()");
        await untilPage(
          evaluate,
          `${SAVED}.lastState === 'EventEstablished'`,
          "the call answered",
        );

        // the transfer button, the user status list, the caller's name
        const transferShown = await state("$('#xuc_transfer').is(':visible')");
        await evaluate(
          "$('#transfer_phone_num').val('0612345678'); $('#xuc_transfer').click()",
        );
        let transferred = true;
        try {
          await untilPage(
            evaluate,
            `${SAVED}.lastState === 'EventReleased'`,
            "the transfer",
            5_000,
          );
        } catch {
          transferred = false;
        }
        const statuses = await state("$('#xuc_user_status option').length");
        console.log(JSON.stringify({
          transferButtonShown: transferShown,
          transferEndedAlicesCall: transferred,
          userStatusOptions: statuses,
          callerNameOnRinging: ringingName ?? null,
        }));
        assert.equal(transferred, true, "directTransfer through the plugin's button");
        assert.equal(statuses, 6, "XiVO's six presences in the user status list");
        assert.equal(ringingName, "Bob Durand", "the caller's name (otherDName)");
        const exceptions = devtools.pageLog.filter((line) => line.startsWith("exception"));
        assert.deepEqual(exceptions, [], devtools.pageLog.join("\n"));
      });
    });
  },
});
