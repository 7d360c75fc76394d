/**
 * Every command function of xuc's `cti.js`, in headless Chromium against the real server
 * (docs/cti.md): a page served on loopback loads jQuery (npm) and a `Cti` object, signs alice in
 * at xuc's own paths (`SVC_XUC_PATHS`), opens the socket through `Cti.WebSocket.init`, and calls
 * each function of {@link TABLE} in turn; the test checks the messages `cti.js`'s handlers got.
 *
 * The `Cti` object is the unchanged `cti.js` of the GLPI "xivo" plugin when `SVC_TEST_CTI_JS`
 * names a copy of it (GPLv3, not in this repository), e.g.
 * `git -C <pluginsGLPI/xivo checkout> show HEAD:js/xivo/cti.js > /tmp/cti.js`; without it, a
 * stand-in of svc's own writing (cti_stand_in.js: the same functions, the documented messages).
 *
 * A row marked `pending` names the work (an issue) that will bring its command: it is expected to
 * fail now, and the test fails when it passes, so that its mark is removed once that work lands.
 * No row is pending today. A row not pending must pass, and never answer `UnknownCommand`.
 */
import assert from "node:assert/strict";
import jquery from "jquery/dist/jquery.min.js" with { type: "text" };
import { ensureDebianPackages, skipWithoutPackages } from "../peers/debian.ts";
import { login } from "./svc_http.ts";
import {
  CHROMIUM_WHY,
  openTab,
  serveFiles,
  untilPage,
  withChromium,
  withDemoBehind,
} from "./chromium.ts";

/** What a row expects back: message types, none at all, or a refusal of the command. */
type Expected = string[] | "none" | `Error ${string}` | `AgentError ${string}`;

interface Row {
  /** The `Cti` function called, and its arguments. */
  fn: string;
  args: unknown[];
  expect: Expected;
  /** Wait for a `PhoneEvent` of this `eventType` (the call's state the next rows need). */
  until?: string;
  /** The work (an issue) that will bring the command: expected to fail now. */
  pending?: string;
}

/**
 * Each of `cti.js`'s 66 command functions at least once, in an order that gives each its state:
 * alice (1001, a supervisor in the demo) with no agent of her own; the demo's agent 8001 (id 1)
 * in queue `sales` (id 1); bob at 1002 answers after 200 ms.
 */
const TABLE: Row[] = [
  { fn: "sendPing", args: [], expect: ["Pong"] },
  { fn: "getConfig", args: ["user"], expect: ["UserConfigUpdate"] },
  { fn: "getConfig", args: ["line"], expect: ["LineConfig"] },
  { fn: "getConfig", args: ["queue"], expect: ["QueueConfig"] },
  { fn: "getConfig", args: ["agent"], expect: ["AgentConfig"] },
  { fn: "dnd", args: [true], expect: ["UserConfigUpdate"] },
  { fn: "uncFwd", args: ["1002", false], expect: ["UserConfigUpdate"] },
  { fn: "naFwd", args: ["1002", false], expect: ["UserConfigUpdate"] },
  { fn: "busyFwd", args: ["1002", false], expect: ["UserConfigUpdate"] },
  // calls: one to bob, held, then ended; the commands needing another state answer its error
  { fn: "dial", args: ["1002", { crm: "T-1" }], expect: ["PhoneEvent"], until: "EventEstablished" },
  { fn: "sendDtmf", args: ["1"], expect: "none" },
  { fn: "getCurrentCallsPhoneEvents", args: [], expect: ["CurrentCallsPhoneEvents"] },
  { fn: "setData", args: [{ ticket: "T-1" }], expect: "none" },
  { fn: "completeTransfer", args: [], expect: "Error NoTransfer" },
  { fn: "cancelTransfer", args: [], expect: "Error NoTransfer" },
  { fn: "conferenceMute", args: ["none", 1], expect: "Error NoConference" },
  { fn: "conferenceUnmute", args: ["none", 1], expect: "Error NoConference" },
  { fn: "conferenceMuteAll", args: ["none"], expect: "Error NoConference" },
  { fn: "conferenceUnmuteAll", args: ["none"], expect: "Error NoConference" },
  { fn: "conferenceMuteMe", args: ["none"], expect: "Error NoConference" },
  { fn: "conferenceUnmuteMe", args: ["none"], expect: "Error NoConference" },
  { fn: "conferenceKick", args: ["none", 1], expect: "Error NoConference" },
  { fn: "hold", args: [], expect: ["PhoneEvent"], until: "EventOnHold" },
  // an attended transfer of the held call to bob's phone, cancelled; then a blind one, which ends
  // alice's call
  { fn: "attendedTransfer", args: ["1002"], expect: ["PhoneEvent"], until: "EventDialing" },
  { fn: "cancelTransfer", args: [], expect: ["PhoneEvent"] },
  { fn: "directTransfer", args: ["1002"], expect: ["PhoneEvent"], until: "EventReleased" },
  { fn: "hangup", args: [], expect: "Error NoCall" },
  { fn: "answer", args: [], expect: "Error NoCall" },
  { fn: "conference", args: [], expect: "Error NoCall" },
  { fn: "dialFromMobile", args: ["1002", {}], expect: "Error NoMobileNumber" },
  { fn: "dialFromQueue", args: ["1002", 1, "Sales", "3000", {}], expect: "Error Forbidden" },
  { fn: "originate", args: ["1002"], expect: ["PhoneEvent"] },
  // agents: alice has none of her own; agent 1 is not logged in
  { fn: "loginAgent", args: ["1001"], expect: "AgentError AgentNotFound" },
  { fn: "logoutAgent", args: [1], expect: "AgentError NotLogged" },
  { fn: "pauseAgent", args: [1, "coaching"], expect: "AgentError NotLogged" },
  { fn: "unpauseAgent", args: [1], expect: "AgentError NotLogged" },
  // the demo's agent is not logged in: the documented refusal (tests/routes/cti_pbx_test.ts and the
  // live test play them on a call)
  { fn: "listenAgent", args: [1], expect: "Error NotLogged" },
  { fn: "monitorPause", args: [1], expect: "Error NotLogged" },
  { fn: "monitorUnpause", args: [1], expect: "Error NotLogged" },
  { fn: "subscribeToAgentEvents", args: [], expect: "none" },
  { fn: "getAgentStates", args: [], expect: ["AgentStateEvent"] },
  // supervision
  { fn: "subscribeToQueueStats", args: [], expect: ["QueueStatistics"] },
  { fn: "getQueueStatistics", args: [1, 3600, 20], expect: ["QueueStatistics"] },
  { fn: "subscribeToAgentStats", args: [], expect: ["AgentStatistics"] },
  { fn: "subscribeToQueueCalls", args: [1], expect: ["QueueCalls"] },
  { fn: "unSubscribeToQueueCalls", args: [1], expect: "none" },
  { fn: "getList", args: ["queue"], expect: ["QueueList"] },
  { fn: "getList", args: ["agent"], expect: ["AgentList"] },
  { fn: "getList", args: ["queuemember"], expect: ["QueueMemberList"] },
  { fn: "setAgentQueue", args: [1, 1, 2], expect: ["QueueMember"] },
  { fn: "removeAgentFromQueue", args: [1, 1], expect: ["QueueMember"] },
  { fn: "getList", args: ["meetme"], expect: ["ConferenceList"] },
  { fn: "getConferenceRooms", args: [], expect: ["ConferenceList"] },
  // alice is in no meeting room: nobody to invite into (docs/cti.md "Meeting rooms")
  { fn: "inviteConferenceRoom", args: [2], expect: ["ConferenceCommandError"] },
  // agent groups
  { fn: "getAgentDirectory", args: [], expect: ["AgentDirectory"] },
  { fn: "setAgentGroup", args: [1, 1], expect: "none" },
  { fn: "moveAgentsInGroup", args: [1, 1, 0, 1, 1], expect: "none" },
  { fn: "addAgentsInGroup", args: [1, 1, 0, 1, 1], expect: "none" },
  { fn: "removeAgentGroupFromQueueGroup", args: [1, 1, 0], expect: "none" },
  { fn: "addAgentsNotInQueueFromGroupTo", args: [1, 1, 0], expect: "none" },
  // call history
  { fn: "getUserCallHistory", args: [10], expect: ["CallHistory"] },
  { fn: "getUserCallHistoryByDays", args: [7], expect: ["CallHistoryByDays"] },
  // alice has no agent of her own
  { fn: "getAgentCallHistory", args: [10], expect: "Error AgentNotFound" },
  { fn: "getQueueCallHistory", args: ["sales", 10], expect: ["CallHistory"] },
  {
    fn: "findCustomerCallHistory",
    args: [1, [{ field: "src_num", operator: "=", value: "1002" }], 10],
    expect: ["CustomerCallHistoryResponseWithId"],
  },
  // directory and favourites
  { fn: "directoryLookUp", args: ["bob"], expect: ["DirectoryResult"] },
  { fn: "getFavorites", args: [], expect: ["Favorites"] },
  { fn: "addFavorite", args: ["2", "internal"], expect: ["FavoriteUpdated"] },
  {
    fn: "removeFavorite",
    args: ["2", "internal"],
    expect: ["FavoriteUpdated"],
  },
  // presence and busy lamps
  { fn: "changeUserStatus", args: ["away"], expect: ["UserStatusUpdate"] },
  {
    fn: "subscribeToPhoneHints",
    args: [["1002"]],
    expect: ["PhoneHintStatusEvent"],
  },
  { fn: "unsubscribeFromAllPhoneHints", args: [], expect: "none" },
  // chat
  {
    fn: "sendFlashTextMessage",
    args: ["bob", 1, "hello"],
    expect: ["FlashTextEvent"],
  },
];

/** What the page saw after one row's call: what was sent, and what came back. */
interface Outcome {
  /** The command sent (`command` of a `web` message, `ping` for the ping). */
  sent: string | null;
  answers: {
    type: string;
    error?: string;
    message?: string;
    command?: string;
    eventType?: string;
  }[];
}

/** The page's own code: sign-in, recording, one row at a time (`window.runRow`). */
const DRIVER = `
"use strict";
const seen = [];
const sentTexts = [];
const send = WebSocket.prototype.send;
WebSocket.prototype.send = function (data) { sentTexts.push(String(data)); return send.call(this, data); };
const pings = () => sentTexts.filter((text) => JSON.parse(text).claz === "ping").length;
const pongs = () => seen.filter((entry) => entry.type === "Pong").length;
const until = async (test, ms) => {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
};
window.signIn = async (svc, login, password) => {
  const response = await fetch(svc + "/xuc/api/2.0/auth/login", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ login, password }),
  });
  const { token } = await response.json();
  for (const type of new Set([...Object.values(Cti.MessageType), "Pong"])) {
    Cti.setHandler(type, (message) => seen.push({ type, message }));
  }
  Cti.WebSocket.init(svc.replace(/^http/, "ws") + "/xuc/api/2.0/cti?token=" + token, login, "");
  await until(() => seen.some((entry) => entry.type === "RightProfile"), 10000);
  const functions = Object.keys(Cti).filter((name) =>
    typeof Cti[name] === "function" && name !== "init" && name !== "sendCallback" &&
    /sendCallback/.test(String(Cti[name]))
  );
  return { status: response.status, greeting: seen.map((entry) => entry.type), functions };
};
window.runRow = async (fn, args, untilEvent, expectTypes) => {
  const start = seen.length;
  const sentStart = sentTexts.length;
  Cti[fn](...args);
  const sent = sentTexts.slice(sentStart).map((text) => JSON.parse(text))[0] ?? null;
  Cti.webSocket.send(JSON.stringify({ claz: "ping" })); // answered once all before it is
  await until(() => pongs() >= pings(), 5000);
  const after = () => seen.slice(start);
  if (untilEvent) {
    await until(() => after().some((e) => e.type === "PhoneEvent" && e.message.eventType === untilEvent), 5000);
  } else if (expectTypes.length) {
    await until(() => expectTypes.every((type) => after().some((e) => e.type === type)), 3000);
  }
  return {
    sent: sent === null ? null : sent.command ?? sent.claz,
    answers: after().filter((e) => e.type !== "Pong" || fn === "sendPing").map(({ type, message }) => ({
      type,
      error: message?.error ?? message?.Error,
      message: message?.message,
      command: message?.command,
      eventType: message?.eventType,
    })),
  };
};
`;

/** Whether `outcome` is what `row` expects; why not when it is not. */
function verdict(row: Row, outcome: Outcome): { ok: boolean; why: string } {
  const refusals = outcome.answers.filter((answer) =>
    (answer.type === "Error" || answer.type === "AgentError") && answer.command === outcome.sent
  );
  const shown = JSON.stringify(outcome);
  if (outcome.sent === null) return { ok: false, why: `nothing was sent: ${shown}` };
  const unknown = refusals.find((answer) =>
    answer.error === "UnknownCommand" || /unknown objectType/.test(answer.message ?? "")
  );
  if (unknown) return { ok: false, why: `UnknownCommand: ${shown}` };
  if (row.expect === "none") {
    return { ok: refusals.length === 0, why: `expected no answer: ${shown}` };
  }
  if (typeof row.expect === "string") {
    const [type, code] = row.expect.split(" ");
    const ok = refusals.some((answer) => answer.type === type && answer.error === code);
    return { ok, why: `expected ${row.expect}: ${shown}` };
  }
  const missing = row.expect.filter((type) => !outcome.answers.some((a) => a.type === type));
  const reached = row.until === undefined ||
    outcome.answers.some((answer) => answer.eventType === row.until);
  return {
    ok: refusals.length === 0 && missing.length === 0 && reached,
    why: `expected ${row.expect.join(", ")}${row.until ? ` (${row.until})` : ""}: ${shown}`,
  };
}

const page = `<!doctype html>
<html><head><meta charset="utf-8"><title>cti.js on svc</title>
<script src="/jquery.js"></script><script src="/cti.js"></script><script src="/driver.js"></script>
</head><body></body></html>`;

/** The `Cti` under test: the real `cti.js` named by `SVC_TEST_CTI_JS`, else the stand-in. */
async function ctiSource(): Promise<{ source: string; real: boolean }> {
  const path = Deno.env.get("SVC_TEST_CTI_JS");
  if (path) return { source: await Deno.readTextFile(path), real: true };
  console.log(
    "SVC_TEST_CTI_JS names no copy of xuc's cti.js: the stand-in tests/e2e/cti_stand_in.js is used",
  );
  const standIn = new URL("./cti_stand_in.js", import.meta.url);
  return { source: await Deno.readTextFile(standIn), real: false };
}

const noChromium = await skipWithoutPackages(["chromium"], CHROMIUM_WHY);

Deno.test({
  name: "every command function of cti.js, through xuc's paths, answered as documented",
  ignore: noChromium,
  async fn() {
    await ensureDebianPackages(["chromium"], CHROMIUM_WHY);
    const { source, real } = await ctiSource();
    const script = (body: string) => ({ type: "text/javascript; charset=utf-8", body });
    const files = {
      "/": { type: "text/html; charset=utf-8", body: page },
      "/jquery.js": script(jquery),
      "/cti.js": script(source),
      "/driver.js": script(DRIVER),
    };
    const pageServer = serveFiles(() => files);
    await withDemoBehind(pageServer, {
      SVC_SIM_ANSWER_MS: "200",
      SVC_SIM_TALK_MS: "0",
      SVC_XUC_PATHS: "true",
    }, async (server, pageOrigin) => {
      // an agent group (id 1) for the group commands: the demo has none
      const ws = await login(server, "webservice", "demo-ws", "demo-ws-secret");
      const group = await fetch(`${server.baseUrl}/1.1/agentgroups`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Auth-Token": ws },
        body: JSON.stringify({ name: "team" }),
      });
      assert.equal(group.status, 201, await group.text());
      await withChromium(async (devtools) => {
        const evaluate = await openTab(devtools, `${pageOrigin}/`);
        await untilPage(evaluate, "window.runRow && window.Cti", "its scripts");
        const signedIn = await evaluate(
          `signIn(${JSON.stringify(server.baseUrl)}, "alice", "alice-demo")`,
        ) as { status: number; greeting: string[]; functions: string[] };
        assert.equal(signedIn.status, 200);
        assert.deepEqual(signedIn.greeting.slice(0, 3), [
          "LinkStatusUpdate",
          "LoggedOn",
          "UserConfigUpdate",
        ]);
        for (const type of ["LineConfig", "RightProfile"]) {
          assert.ok(signedIn.greeting.includes(type), signedIn.greeting.join());
        }
        // the table calls every command function of the Cti under test
        assert.equal(signedIn.functions.length, 66, signedIn.functions.join());
        const called = new Set(TABLE.map((row) => row.fn));
        assert.deepEqual(signedIn.functions.filter((fn) => !called.has(fn)), []);

        const failures: string[] = [];
        const pendingPassing: string[] = [];
        const report: string[] = [];
        for (const row of TABLE) {
          const expectTypes = Array.isArray(row.expect) ? row.expect : [];
          const outcome = await evaluate(
            `runRow(${JSON.stringify(row.fn)}, ${JSON.stringify(row.args)}, ${
              JSON.stringify(row.until ?? null)
            }, ${JSON.stringify(expectTypes)})`,
          ) as Outcome;
          const { ok, why } = verdict(row, outcome);
          const name = `${row.fn}(${JSON.stringify(row.args).slice(1, -1)})`;
          report.push(`${ok ? "ok  " : "FAIL"} ${row.pending ? "[pending] " : ""}${name}`);
          if (row.pending && ok) pendingPassing.push(`${name} (${row.pending})`);
          if (!row.pending && !ok) failures.push(`${name}: ${why}`);
        }
        console.log(`${real ? "the real cti.js" : "the stand-in"}:\n${report.join("\n")}`);
        assert.deepEqual(failures, [], "rows expected to work");
        assert.deepEqual(
          pendingPassing,
          [],
          "pending rows that pass now: remove their pending mark",
        );
      });
    });
  },
});
