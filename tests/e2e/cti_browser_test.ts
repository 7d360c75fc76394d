/**
 * End-to-end CTI channel in a real browser (docs/cti.md): the demo server (fast simulated phones)
 * with `SVC_CORS_ORIGINS` naming a page's origin, and headless Chromium (Debian's `chromium`)
 * driven over the DevTools protocol. The page, served from another origin on 127.0.0.1, signs alice
 * in with `fetch`, opens `/svc/api/2.0/cti` as a WebSocket, pings, dials bob (1002) and records what
 * it receives; the test reads that record through `Runtime.evaluate`. Alice's own phone must go
 * `EventDialing`, `EventEstablished`, `EventReleased`, after the greeting (`LoggedOn`, ...).
 */
import assert from "node:assert/strict";
import { ensureDebianPackages, skipWithoutPackages } from "../peers/debian.ts";
import {
  CHROMIUM_WHY,
  type DevTools,
  servePage,
  withChromium,
  withDemoBehind,
} from "./chromium.ts";

/** How long the page may take from its first request to alice's hangup. */
const PAGE_BUDGET_MS = 20_000;

/** The page's script: `window.finished` resolves to what the page saw (see {@link Seen}). */
function pageScript(svcUrl: string): string {
  return `
const svc = ${JSON.stringify(svcUrl)};
const seen = { login: null, messages: [], loggedOn: null, phoneEvents: [], errors: [], close: null };
window.finished = (async () => {
  const response = await fetch(svc + "/svc/api/2.0/auth/login", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ login: "alice", password: "alice-demo" }),
  });
  const { token } = await response.json();
  seen.login = response.status;
  const url = svc.replace(/^http/, "ws") + "/svc/api/2.0/cti?token=" + encodeURIComponent(token);
  const socket = new WebSocket(url);
  const send = (message) => socket.send(JSON.stringify(message));
  await new Promise((resolve) => {
    const timer = setTimeout(() => { seen.close = "page timeout"; resolve(); }, ${PAGE_BUDGET_MS});
    socket.onmessage = (event) => {
      const { msgType, ctiMessage } = JSON.parse(event.data);
      seen.messages.push(msgType);
      if (msgType === "LoggedOn") {
        seen.loggedOn = ctiMessage;
        send({ claz: "ping" });
        send({ claz: "web", command: "dial", destination: "1002" });
      } else if (msgType === "Error") {
        seen.errors.push(ctiMessage);
      } else if (msgType === "PhoneEvent") {
        const { eventType, DN, otherDN } = ctiMessage;
        seen.phoneEvents.push({ eventType, DN, otherDN });
        if (eventType === "EventReleased" && DN === seen.loggedOn?.phoneNumber) {
          clearTimeout(timer);
          seen.close = "by the page";
          socket.close(1000, "done");
          resolve();
        }
      }
    };
    socket.onclose = (event) => {
      clearTimeout(timer);
      seen.close ??= { code: event.code, reason: event.reason };
      resolve();
    };
  });
  return seen;
})();
`;
}

/** What the page recorded. */
interface Seen {
  login: number | null;
  messages: string[];
  loggedOn: { userId: number; username: string; phoneNumber: string } | null;
  phoneEvents: { eventType: string; DN: string; otherDN: string }[];
  errors: unknown[];
  close: unknown;
}

const page = (script: string) =>
  `<!doctype html>
<html><head><meta charset="utf-8"><title>svc CTI</title></head>
<body><script type="module">${script}</script></body></html>`;

/** Opens `url` in a new tab and answers the value `window.finished` resolves to. */
async function runPage(devtools: DevTools, url: string): Promise<Seen> {
  const { targetId } = await devtools.send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await devtools.send("Target.attachToTarget", { targetId, flatten: true });
  await devtools.send("Runtime.enable", {}, sessionId);
  await devtools.send("Page.enable", {}, sessionId);
  await devtools.send("Page.navigate", { url }, sessionId);
  // the module script sets `window.finished` once it runs: wait for it, then for its end
  const deadline = performance.now() + 10_000;
  for (;;) {
    const probe = await devtools.send("Runtime.evaluate", {
      expression: "typeof window.finished",
      returnByValue: true,
    }, sessionId);
    if (probe.result?.value === "object") break;
    if (performance.now() > deadline) {
      throw new Error(`the page did not start:\n${devtools.pageLog.join("\n")}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const answer = await devtools.send("Runtime.evaluate", {
    expression: "window.finished",
    awaitPromise: true,
    returnByValue: true,
    timeout: PAGE_BUDGET_MS + 5_000,
  }, sessionId);
  if (answer.exceptionDetails) {
    throw new Error(
      `the page failed: ${JSON.stringify(answer.exceptionDetails)}\n${devtools.pageLog.join("\n")}`,
    );
  }
  return answer.result.value as Seen;
}

const noChromium = await skipWithoutPackages(["chromium"], CHROMIUM_WHY);

Deno.test({
  name: "a browser page signs alice in, opens the CTI socket and sees her call go through",
  ignore: noChromium,
  async fn() {
    await ensureDebianPackages(["chromium"], CHROMIUM_WHY);
    let svcUrl = "";
    const pageServer = servePage(() => page(pageScript(svcUrl)));
    await withDemoBehind(pageServer, {
      SVC_SIM_ANSWER_MS: "200",
      SVC_SIM_TALK_MS: "500",
    }, async (server, pageOrigin) => {
      svcUrl = server.baseUrl;
      const seen = await withChromium((devtools) => runPage(devtools, `${pageOrigin}/`));
      const shown = JSON.stringify(seen);
      assert.equal(seen.login, 200, shown);
      assert.deepEqual(seen.errors, [], shown);
      assert.equal(seen.messages[0], "LoggedOn", shown);
      assert.deepEqual(
        { username: seen.loggedOn?.username, phoneNumber: seen.loggedOn?.phoneNumber },
        { username: "alice", phoneNumber: "1001" },
      );
      // the greeting: the configuration and the own phone's status come before any event
      assert.deepEqual(seen.messages.slice(1, 3), ["UserConfigUpdate", "PhoneStatusUpdate"]);
      assert.ok(seen.messages.includes("Pong"), shown);
      const own = seen.phoneEvents.filter((event) => event.DN === "1001");
      assert.deepEqual(
        own.map((event) => event.eventType),
        ["EventDialing", "EventEstablished", "EventReleased"],
        shown,
      );
      for (const event of own) assert.equal(event.otherDN, "1002");
      assert.equal(seen.close, "by the page", shown); // not closed by the server

      // what reached the server: the login's preflight and the upgrade
      const requests = server.stderrLines.filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line)).filter((line) => line.msg === "request")
        .map((r) => `${r.method} ${r.path} ${r.status}`);
      assert.ok(requests.includes("OPTIONS /svc/api/2.0/auth/login 204"), requests.join("\n"));
      assert.ok(requests.includes("GET /svc/api/2.0/cti 101"), requests.join("\n"));
    });
  },
});
