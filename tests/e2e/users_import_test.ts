/**
 * A users CSV import of 20,000 rows (user, SIP line, extension) against the real server process:
 * other clients see none of it until it commits, then all of it, through every kind of read (the
 * list's total, by id, by uuid, the username at login, the export); a server killed in the middle
 * of one shows none of it from its first answer after the restart, and the same file then imports.
 */
import assert from "node:assert/strict";
import { type RunningServer, startServer, withTempDir } from "./server.ts";
import { call, expectStatus, login, V2 } from "./svc_http.ts";

const ADMIN = { SVC_ADMIN_LOGIN: "import-admin", SVC_ADMIN_PASSWORD: "import-admin-password" };
const ROWS = 20_000;
/** Rows whose user gets a password, so that a login looks its username up. */
const LOGIN_ROWS = [1, 10_000, 20_000];
/** Rows whose user is read by id and by uuid. */
const READ_ROWS = [1, 10_000, 20_000];

/** The file of scenario `tag` (a number): uuids and usernames of its own. */
function usersCsv(tag: number): { csv: string; uuid: (row: number) => string } {
  const uuid = (row: number) =>
    `${String(tag).padStart(8, "0")}-0000-4000-8000-${String(row).padStart(12, "0")}`;
  const lines = ["uuid,firstname,lastname,username,password,line_protocol,context,exten"];
  for (let row = 1; row <= ROWS; row++) {
    const password = LOGIN_ROWS.includes(row) ? `pw-${tag}-${row}` : "";
    lines.push(
      `${uuid(row)},Imported,Row ${row},imp${tag}-${row},${password},sip,imp,${100_000 + row}`,
    );
  }
  return { csv: lines.join("\n"), uuid };
}

/** The administrator's token, a context for the extensions, and the next user id. */
async function prepare(server: RunningServer) {
  const token = await login(server, "webservice", ADMIN.SVC_ADMIN_LOGIN, ADMIN.SVC_ADMIN_PASSWORD);
  const context = { name: "imp", user_ranges: [{ start: "100000", end: "199999" }] };
  await expectStatus(201, server, "POST", "/1.1/contexts", { token, body: context });
  const seed = await expectStatus(201, server, "POST", "/1.1/users", {
    token,
    body: { firstname: "Seed" },
  });
  const total = (await expectStatus(200, server, "GET", "/1.1/users?limit=1", { token })).body
    .total as number;
  return { token, firstId: seed.body.id + 1, total };
}

function postCsv(server: RunningServer, token: string, csv: string): Promise<Response> {
  return fetch(`${server.baseUrl}/1.1/users/import`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "text/csv" },
    body: csv,
    signal: AbortSignal.timeout(180_000),
  });
}

/** One read of a client, answering whether it sees the import (true), not at all (false). */
type Read = { name: string; run: () => Promise<boolean> };

/**
 * The reads of a client: each sees the import whole or not at all (anything else fails), as
 * values that can only be the one before or the one after.
 */
function reads(
  server: RunningServer,
  token: string,
  scenario: { tag: number; firstId: number; total: number; uuid: (row: number) => string },
): Read[] {
  const either = (name: string, value: unknown, before: unknown, after: unknown) => {
    assert.ok(value === before || value === after, `${name}: ${value} (${before} or ${after})`);
    return value === after;
  };
  const found = async (path: string) => {
    const { status } = await call(server, "GET", path, { token });
    return either(path, status, 404, 200);
  };
  const list: Read[] = [{
    name: "the list's total",
    run: async () => {
      const { body } = await expectStatus(200, server, "GET", "/1.1/users?limit=1", { token });
      return either("total", body.total, scenario.total, scenario.total + ROWS);
    },
  }];
  for (const row of READ_ROWS) {
    list.push({
      name: `user ${row} by id`,
      run: () => found(`/1.1/users/${scenario.firstId + row - 1}`),
    });
    list.push({
      name: `user ${row} by uuid`,
      run: () => found(`/1.1/users/${scenario.uuid(row)}`),
    });
  }
  return list;
}

/** The export's rows of the import: none or all of them. */
async function exported(server: RunningServer, token: string, tag: number): Promise<boolean> {
  const response = await fetch(`${server.baseUrl}/1.1/users/export`, {
    headers: { Authorization: `Bearer ${token}`, Accept: "text/csv" },
  });
  assert.equal(response.status, 200);
  const rows = (await response.text()).split("\r\n").filter((line) => line.includes(`imp${tag}-`))
    .length;
  assert.ok(rows === 0 || rows === ROWS, `export: ${rows} rows of the import`);
  return rows === ROWS;
}

/** A login with the username of `row`: 401 while the import does not show, 200 once it does. */
async function loginSees(server: RunningServer, tag: number, row: number): Promise<boolean> {
  const { status } = await call(server, "POST", `${V2}/auth/login`, {
    body: { login: `imp${tag}-${row}`, password: `pw-${tag}-${row}` },
  });
  assert.ok(status === 401 || status === 200, `login of row ${row}: ${status}`);
  return status === 200;
}

Deno.test("a 20,000-row users import shows to other clients all at once, when it commits", async () => {
  await withTempDir(async (dir) => {
    const server = await startServer({ SVC_KV: `${dir}/svc.kv`, ...ADMIN });
    try {
      const { token, firstId, total } = await prepare(server);
      const tag = 1;
      const { csv, uuid } = usersCsv(tag);
      const scenario = { tag, firstId, total, uuid };
      let answered = false;
      const importing = postCsv(server, token, csv).then(async (response) => {
        const body = await response.json();
        answered = true;
        return { status: response.status, body };
      });
      // reads one after the other: once one sees the import, every later one must
      const seen: { name: string; whole: boolean; answered: boolean }[] = [];
      const logins = new Map<number, number>();
      for (let poll = 0; !answered; poll++) {
        const checks = [...reads(server, token, scenario)];
        if (poll % 10 === 0) {
          checks.push({
            name: "export",
            run: () => exported(server, token, tag),
          });
        }
        // at most 8 failed logins per username: 10 would block it (login throttling)
        const row = LOGIN_ROWS[poll % LOGIN_ROWS.length]!;
        if ((logins.get(row) ?? 0) < 8) {
          logins.set(row, (logins.get(row) ?? 0) + 1);
          checks.push({ name: `login of row ${row}`, run: () => loginSees(server, tag, row) });
        }
        for (const check of checks) {
          const wasAnswered = answered;
          seen.push({ name: check.name, whole: await check.run(), answered: wasAnswered });
        }
      }
      const answer = await importing;
      assert.equal(answer.status, 201, JSON.stringify(answer.body).slice(0, 500));
      assert.equal(answer.body.created.length, ROWS);
      assert.equal(answer.body.created[0].user_id, firstId);
      const firstWhole = seen.findIndex((read) => read.whole);
      const lastNothing = seen.findLastIndex((read) => !read.whole);
      assert.ok(
        firstWhole === -1 || lastNothing < firstWhole,
        `${seen[lastNothing]?.name} saw nothing after ${seen[firstWhole]?.name} saw it all`,
      );
      const during = seen.filter((read) => !read.answered && !read.whole);
      assert.ok(during.length >= 50, `only ${during.length} reads during the import`);
      assert.ok(during.some((read) => read.name === "export"));
      assert.ok(during.some((read) => read.name.startsWith("login")));
      // once it answered: everything, everywhere
      for (const check of reads(server, token, scenario)) {
        assert.equal(await check.run(), true, check.name);
      }
      assert.equal(await exported(server, token, tag), true);
      for (const row of LOGIN_ROWS) assert.equal(await loginSees(server, tag, row), true);
    } finally {
      await server.stop();
    }
  });
});

/**
 * Kills the server once the import has staged the records of `row` rows, or once its last commit
 * is made (`"committed"`: its phase key says so), restarts it and checks every read from the first
 * answer on: none sees the import (or, when the kill came after its last commit, every one sees all
 * of it); then imports the same file again.
 */
async function killedImport(tag: number, when: number | "committed") {
  await withTempDir(async (dir) => {
    const path = `${dir}/svc.kv`;
    let server = await startServer({ SVC_KV: path, ...ADMIN });
    const kv = await Deno.openKv(path);
    try {
      const { token, firstId, total } = await prepare(server);
      const { csv, uuid } = usersCsv(tag);
      let answered: number | null = null;
      const importing = postCsv(server, token, csv).then(
        (response) => (answered = response.status),
        () => "cut off",
      );
      // each row's user is staged after its endpoint, extension and line: watch the store itself,
      // closely (the last commit follows the last row's by a few milliseconds)
      const reached = when === "committed"
        ? async () =>
          (await Array.fromAsync(kv.list<string>({ prefix: ["bulk_phase"] })))
            .some((entry) => entry.value === "committed")
        : async () => (await kv.get(["users", firstId + when - 1])).value !== null;
      const deadline = performance.now() + 120_000;
      while (answered === null && !await reached()) {
        assert.ok(performance.now() < deadline, `${when} not reached within 120 s`);
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      const killed = await server.kill();
      assert.equal(killed.signal, "SIGKILL");
      // committed, the import may have answered just before the kill
      if (when !== "committed") assert.equal(await importing, "cut off", "it answered first");

      server = await startServer({ SVC_KV: path, ...ADMIN });
      // from the first answer on, for 3 s: every read sees the same, nothing or the whole import
      const scenario = { tag, firstId, total, uuid };
      const checks = reads(server, token, scenario);
      const whole = await checks[0]!.run();
      if (typeof when === "number" && when < ROWS) {
        assert.equal(whole, false, "an import killed before its last commit shows");
      }
      if (when === "committed") assert.equal(whole, true, "a committed import does not show");
      console.log(`killed at ${when}: after the restart, ${whole ? "all" : "none"} of it shows`);
      const end = performance.now() + 3_000;
      let polls = 0;
      do {
        for (const check of checks) assert.equal(await check.run(), whole, check.name);
        if (polls++ % 5 === 0) assert.equal(await exported(server, token, tag), whole, "export");
      } while (performance.now() < end);
      assert.equal(await loginSees(server, tag, LOGIN_ROWS[0]!), whole);

      // the same file again: created (values the dead import held are waited for), or, when
      // the killed import had committed, every row taken
      const again = await postCsv(server, token, csv);
      const body = await again.json();
      if (whole) {
        assert.equal(again.status, 400);
        assert.equal(body.length, 3 * ROWS, "each row's uuid, username and extension are taken");
        return;
      }
      assert.equal(again.status, 201, JSON.stringify(body).slice(0, 500));
      const imported = { ...scenario, firstId: body.created[0].user_id };
      assert.ok(imported.firstId >= firstId + ROWS, "the dead import's ids are not given again");
      for (const check of reads(server, token, imported)) {
        assert.equal(await check.run(), true, check.name);
      }
      assert.equal(await exported(server, token, tag), true);
      assert.equal(await loginSees(server, tag, LOGIN_ROWS[2]!), true);
      for (const check of reads(server, token, scenario).slice(1)) {
        if (check.name.endsWith("by id")) assert.equal(await check.run(), false, check.name);
      }
      // what the dead import left is gone (the first try of the file waited for its recovery)
      assert.deepEqual(await Array.fromAsync(kv.list({ prefix: ["bulk_journal"] })), []);
    } finally {
      kv.close();
      await server.stop();
    }
  });
}

Deno.test("a server killed early in a 20,000-row users import: nothing shows after a restart", () =>
  killedImport(2, 500));

Deno.test("a server killed in the middle of a 20,000-row users import: nothing shows after a restart", () =>
  killedImport(3, 10_000));

Deno.test("a server killed at the last commit of a 20,000-row users import: all or nothing shows", () =>
  killedImport(4, ROWS));

Deno.test("a server killed right after the last commit of a 20,000-row users import: all shows", () =>
  killedImport(5, "committed"));
