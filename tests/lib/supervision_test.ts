/**
 * Supervision's building blocks (docs/supervision.md): days in a time zone (midnight, a day of 23
 * hours), the settings and their refusals, and what an agent's state change counts.
 */
import assert from "node:assert/strict";
import { ConfigError, loadConfig } from "../../lib/config.ts";
import type { AgentPresence, AgentStateEvent } from "../../lib/platform/port.ts";
import { agentStateChanges, supervisionSettings } from "../../lib/supervision/counting.ts";
import {
  addDays,
  dayOf,
  daysSpanned,
  dayStart,
  intervalOf,
  intervalStarts,
  isDay,
  splitByDay,
} from "../../lib/supervision/days.ts";
import { forQueue, perQueueSetting } from "../../lib/supervision/settings.ts";

const HOUR = 3600_000;

Deno.test("days: the day of an instant, its start, a stretch cut at each midnight", () => {
  const lateUtc = Date.UTC(2026, 0, 1, 23, 30);
  assert.equal(dayOf(lateUtc, "UTC"), "2026-01-01");
  assert.equal(dayOf(lateUtc, "Europe/Paris"), "2026-01-02");
  assert.equal(dayOf(Date.UTC(2026, 0, 2, 3), "America/New_York"), "2026-01-01");
  assert.equal(dayStart("2026-01-02", "UTC"), Date.UTC(2026, 0, 2));
  assert.equal(dayStart("2026-01-02", "Europe/Paris"), Date.UTC(2026, 0, 1, 23));
  assert.deepEqual(splitByDay(Date.UTC(2026, 0, 1, 23, 59), Date.UTC(2026, 0, 2, 0, 1), "UTC"), [
    { day: "2026-01-01", ms: 60_000 },
    { day: "2026-01-02", ms: 60_000 },
  ]);
  // 29 March 2026 in Paris has 23 hours (summer time starts)
  assert.deepEqual(
    splitByDay(Date.UTC(2026, 2, 28, 23), Date.UTC(2026, 2, 29, 22), "Europe/Paris"),
    [{ day: "2026-03-29", ms: 23 * HOUR }],
  );
  assert.deepEqual(splitByDay(10, 10, "UTC"), []);
  assert.deepEqual(splitByDay(10, 5, "UTC"), []);
  assert.equal(addDays("2026-02-28", 1), "2026-03-01");
  assert.equal(addDays("2026-01-01", -1), "2025-12-31");
  assert.equal(daysSpanned("2026-01-01", "2026-01-01"), 1);
  assert.equal(daysSpanned("2026-01-01", "2026-02-04"), 35);
  for (const day of ["2026-01-01", "2024-02-29"]) assert.equal(isDay(day), true, day);
  for (const text of ["2026-02-30", "2025-02-29", "2026-1-1", "20260101", "2026-01-01T00:00", ""]) {
    assert.equal(isDay(text), false, text);
  }
});

Deno.test("a day's intervals of 15 minutes, counted from its first instant", () => {
  assert.deepEqual(intervalOf(Date.UTC(2026, 0, 1, 8, 20), "UTC"), { day: "2026-01-01", slot: 33 });
  assert.deepEqual(intervalOf(Date.UTC(2026, 0, 1, 23, 59, 59), "UTC"), {
    day: "2026-01-01",
    slot: 95,
  });
  // 00:10 in Paris is 23:10 UTC the day before
  assert.deepEqual(intervalOf(Date.UTC(2025, 11, 31, 23, 10), "Europe/Paris"), {
    day: "2026-01-01",
    slot: 0,
  });
  const never = Number.MAX_SAFE_INTEGER;
  assert.equal(intervalStarts("2026-01-01", "UTC", never).length, 96);
  // summer time starts on 29 March 2026 in Paris (23 hours), ends on 25 October (25 hours)
  assert.equal(intervalStarts("2026-03-29", "Europe/Paris", never).length, 92);
  const autumn = intervalStarts("2026-10-25", "Europe/Paris", never);
  assert.equal(autumn.length, 100);
  assert.deepEqual(intervalOf(autumn[99]!, "Europe/Paris"), { day: "2026-10-25", slot: 99 });
  assert.deepEqual(intervalStarts("2026-01-01", "UTC", Date.UTC(2026, 0, 1, 0, 15)), [
    Date.UTC(2026, 0, 1),
    Date.UTC(2026, 0, 1, 0, 15),
  ]);
  assert.deepEqual(intervalStarts("2026-01-02", "UTC", Date.UTC(2026, 0, 1, 23, 59)), []);
});

Deno.test("settings: defaults, overrides by queue name, refusals naming the setting", () => {
  const defaults = supervisionSettings(loadConfig({ SVC_KV: ":memory:" }));
  assert.deepEqual(defaults, {
    timeZone: { default: "UTC", byQueue: {} },
    serviceLevelSeconds: { default: 20, byQueue: {} },
    shortAbandonSeconds: 5,
    retentionDays: 35,
  });
  const set = supervisionSettings(loadConfig({
    SVC_KV: ":memory:",
    SVC_SUPERVISION_TIMEZONE: "europe/paris, support=America/New_York",
    SVC_SUPERVISION_SERVICE_LEVEL: "sales=30",
    SVC_SUPERVISION_SHORT_ABANDON: "0",
    SVC_SUPERVISION_RETENTION_DAYS: "90",
  }));
  assert.deepEqual(set.timeZone, {
    default: "Europe/Paris",
    byQueue: { support: "America/New_York" },
  });
  assert.equal(forQueue(set.timeZone, "support"), "America/New_York");
  assert.equal(forQueue(set.timeZone, "sales"), "Europe/Paris");
  assert.equal(forQueue(set.serviceLevelSeconds, "sales"), 30);
  assert.equal(forQueue(set.serviceLevelSeconds, undefined), 20);
  assert.deepEqual([set.shortAbandonSeconds, set.retentionDays], [0, 90]);
  assert.deepEqual(perQueueSetting(" 10 ,, a-b_1=5 ", "20", Number), {
    default: 10,
    byQueue: { "a-b_1": 5 },
  });

  const refused: [string, string, RegExp][] = [
    ["SVC_SUPERVISION_TIMEZONE", "Mars/Base", /"Mars\/Base" is no time zone/],
    ["SVC_SUPERVISION_TIMEZONE", "UTC,sales=Nowhere", /"Nowhere" is no time zone/],
    ["SVC_SUPERVISION_TIMEZONE", "UTC,Europe/Paris", /gives two defaults/],
    ["SVC_SUPERVISION_SERVICE_LEVEL", "0", /integer from 1 to 3600/],
    ["SVC_SUPERVISION_SERVICE_LEVEL", "20,sales=x", /integer from 1 to 3600/],
    ["SVC_SUPERVISION_SERVICE_LEVEL", "sales=1,sales=2", /names the queue sales twice/],
    ["SVC_SUPERVISION_SERVICE_LEVEL", "my queue=3", /"my queue" is no queue name/],
    ["SVC_SUPERVISION_SHORT_ABANDON", "-1", /integer from 0 to 3600/],
    ["SVC_SUPERVISION_RETENTION_DAYS", "0", /integer from 1 to 3660/],
  ];
  for (const [name, value, message] of refused) {
    assert.throws(
      () => loadConfig({ SVC_KV: ":memory:", [name]: value }),
      (error: unknown) =>
        error instanceof ConfigError && error.setting === name && message.test(error.message),
      `${name}=${value}`,
    );
  }
});

Deno.test("an agent's state change: what it closes, and its new mark", () => {
  const settings = supervisionSettings(loadConfig({ SVC_KV: ":memory:" }));
  const t0 = Date.UTC(2026, 0, 1, 10);
  const event = (name: AgentStateEvent["name"]): AgentStateEvent => ({
    kind: "agent",
    agentId: 7,
    agentNumber: "8007",
    name,
    phoneNb: "1001",
    username: "alice",
    queues: [1],
    monitorState: "DISABLED",
  });
  const presence = (loggedSinceMs: number | null): AgentPresence => ({
    agentId: 7,
    logged: loggedSinceMs !== null,
    paused: false,
    pausedReason: null,
    extension: "1001",
    context: "default",
    state: "AgentReady",
    sinceMs: t0,
    loggedSinceMs,
  });
  const stats = (changes: { stat: string; value: number; day: string }[]) =>
    changes.map(({ stat, value, day }) => [day, stat, value]);

  // first seen (svc started after the login): nothing closed, the login time from the platform
  const first = agentStateChanges(null, event("AgentOnPause"), presence(t0 - HOUR), t0, settings);
  assert.deepEqual(first.changes, []);
  assert.deepEqual(first.mark, { state: "AgentOnPause", sinceMs: t0, loggedSinceMs: t0 - HOUR });
  // the pause ends: its time counted
  const ready = agentStateChanges(
    first.mark,
    event("AgentReady"),
    presence(t0),
    t0 + 60_000,
    settings,
  );
  assert.deepEqual(stats(ready.changes), [["2026-01-01", "pause_ms", 60_000]]);
  assert.equal(ready.mark.loggedSinceMs, t0 - HOUR, "the login goes on");
  // rung, then ready again: missed; rung, then on a call: not
  const ringing = agentStateChanges(
    ready.mark,
    event("AgentRinging"),
    presence(t0),
    t0 + 61_000,
    settings,
  );
  const missed = agentStateChanges(
    ringing.mark,
    event("AgentReady"),
    presence(t0),
    t0 + 62_000,
    settings,
  );
  assert.deepEqual(stats(missed.changes), [["2026-01-01", "missed", 1]]);
  const answered = agentStateChanges(
    ringing.mark,
    event("AgentOnCall"),
    presence(t0),
    t0 + 62_000,
    settings,
  );
  assert.deepEqual(answered.changes, []);
  // logged out while ringing: missed, and the login time counted
  const out = agentStateChanges(
    ringing.mark,
    event("AgentLoggedOut"),
    presence(null),
    t0 + 63_000,
    settings,
  );
  assert.deepEqual(stats(out.changes), [
    ["2026-01-01", "missed", 1],
    ["2026-01-01", "login_ms", HOUR + 63_000],
  ]);
  assert.deepEqual(out.mark, {
    state: "AgentLoggedOut",
    sinceMs: t0 + 63_000,
    loggedSinceMs: null,
  });
  // logged in again: from now
  const back = agentStateChanges(
    out.mark,
    event("AgentReady"),
    presence(t0 + 70_000),
    t0 + 70_000,
    settings,
  );
  assert.deepEqual(back.changes, []);
  assert.equal(back.mark.loggedSinceMs, t0 + 70_000);
});
