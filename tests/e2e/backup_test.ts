/**
 * End-to-end backup and restore (`deno task backup`, `deno task restore`, lib/store/backup.ts): the
 * real server fills every area of a store file, `deno task backup` runs while four writers keep
 * writing through the API, `deno task restore` loads the file into a fresh store, and the real
 * server started on it answers every read (lists and by-id reads of every area) as the source did
 * at the snapshot's point: every record written before the backup started is there, and each
 * writer's records are an exact prefix of what it wrote (nothing half-written).
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { closedPort } from "../helpers.ts";
import { repoRoot, type RunningServer, startServer, withTempDir } from "./server.ts";
import { type Answer, call, login, phoneUser, sleep, until, V2 } from "./svc_http.ts";

interface TaskResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `deno task <name> <args>` from the repository root with our environment minus `SVC_*`. */
async function runTask(
  name: string,
  args: string[],
  env: Record<string, string>,
): Promise<TaskResult> {
  const inherited = Object.entries(Deno.env.toObject()).filter(([key]) => !key.startsWith("SVC_"));
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", name, ...args],
    cwd: repoRoot,
    env: { ...Object.fromEntries(inherited), ...env },
    clearEnv: true,
    stdin: "null",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/** `call` asserting a 2xx status. */
async function ok(
  server: RunningServer,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<Answer> {
  const answer = await call(server, method, path, { token, body });
  assert.ok(
    answer.status >= 200 && answer.status < 300,
    `${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`,
  );
  return answer;
}

/** A request whose answer is text (CSV), asserting 200. */
async function text(
  server: RunningServer,
  method: string,
  path: string,
  token: string,
  { body, accept }: { body?: unknown; accept?: string } = {},
): Promise<string> {
  const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (accept) headers.Accept = accept;
  const response = await fetch(server.baseUrl + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await response.text();
  assert.equal(response.status, 200, `${method} ${path}: ${answer}`);
  return answer;
}

/** A users CSV import through `/1.1/users/import`. */
async function importUsers(server: RunningServer, token: string, csv: string) {
  const response = await fetch(`${server.baseUrl}/1.1/users/import`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "text/csv; charset=utf-8" },
    body: csv,
  });
  const answer = await response.text();
  assert.equal(response.status, 201, answer);
}

const CALLBACK_HEADER =
  "phoneNumber|mobilePhoneNumber|firstName|lastName|company|description|dueDate|period";

interface Fixture {
  admin: string;
  alice: string;
  /** The demo's sub-qualification on queue 1 (sales). */
  subQualificationId: number;
  /** The demo's callback list. */
  listUuid: string;
}

/** Fills every area through the API, on top of the demo data set. */
async function fill(server: RunningServer): Promise<Fixture> {
  const admin = await login(server, "webservice", "admin", "admin-secret");
  const post = (path: string, body: unknown, token = admin) =>
    ok(server, "POST", path, token, body).then((answer) => answer.body);
  // configuration: every /1.1 resource
  await post("/1.1/contexts", {
    name: "outside",
    display_name: "Outside",
    user_ranges: [{ start: "5000", end: "5099" }],
  });
  const carol = await phoneUser(server, admin, {
    username: "carol",
    password: "carol-pw",
    exten: "1003",
    secret: "carol-sip-secret",
  });
  await post("/1.1/voicemails", { name: "Carol", number: "1003", context: "default" });
  await post("/1.1/callpermissions", { name: "no-mobiles", user_ids: [carol] });
  await post("/1.1/entities", { name: "acme", display_name: "ACME Inc." });
  await post("/1.1/labels", { name: "VIP" });
  await post("/1.1/switchboards", { name: "Reception" });
  await post("/1.1/devices", { mac: "00:11:22:33:44:55" });
  await post("/1.1/endpoints/sccp", {});
  await post("/1.1/endpoints/custom", { interface: "local/100" });
  await post("/1.1/webservice_users", {
    login: "crm",
    password: "crm-secret",
    acls: ["svc.rest.dial.#"],
  });
  const hotline = await post("/1.1/queues", { name: "hotline", number: "3005" });
  await post("/1.1/agents", { number: "8002", firstname: "Carol" });
  await post("/1.1/call_qualifications", {
    name: "Support",
    sub_qualifications: [{ name: "Solved" }, { name: "Escalated" }],
  });
  await post("/1.1/callback_lists", { name: "Hotline callbacks", queue_id: hotline.id });
  await importUsers(
    server,
    admin,
    "firstname,lastname,username,password,line_protocol,context,exten\n" +
      'Dave,=HYPERLINK("http://x"),dave,dave-pw,sip,default,1014\nEve,Roy,eve,eve-pw,,,\n',
  );
  // CTI users: contacts, push tokens, a connection (kept with an expiry)
  const alice = await login(server, "login", "alice", "alice-demo");
  await login(server, "login", "bob", "bob-demo");
  for (
    const contact of [
      { firstname: "Bob", lastname: "Durand", number: "0612345678" },
      { firstname: "=cmd|' /C calc'!A0", lastname: "Formula", company: "ACME" },
      { firstname: "Zoé", lastname: "Ünal", email: "zoe@example.com" },
    ]
  ) {
    await post(`${V2}/contact/personal`, contact, alice);
  }
  await post(`${V2}/mobile/push/register/android`, { token: "fcm-token-alice" }, alice);
  // services: DND and a forward (their config events go to the outbox)
  await post(`${V2}/dnd/bob`, { state: true });
  await post(`${V2}/forward/unconditional/bob`, { destination: "0612345678", enabled: true });
  // call qualification answers
  const qualifications = (await ok(server, "GET", `${V2}/call_qualification/queue/1`, alice)).body;
  const subQualificationId = qualifications[0].subQualifications[0].id;
  for (let i = 0; i < 3; i++) {
    await post(`${V2}/call_qualification`, {
      sub_qualification_id: subQualificationId,
      time: `2026-01-01 10:00:0${i}`,
      callid: `1767261600.${i}`,
      agent: 1,
      queue: 1,
      comment: i === 0 ? "-5 stars" : "ok",
    }, alice);
  }
  // callback lists: a request taken and answered, so that the list has a ticket
  const lists = (await ok(server, "GET", `${V2}/callback_lists`, admin)).body;
  const demoList = lists.find((list: { name: string }) => list.name === "Sales callbacks");
  const request = demoList.callbacks[0].uuid;
  await post(`${V2}/callback_lists/callback_requests/${request}/take`, { agentNumber: "8001" });
  await ok(server, "PUT", `${V2}/callback_lists/callback_requests/${request}/ticket`, admin, {
    status: "Answered",
    comment: "=1+1 happy",
  });
  // the agent daemon: the server's identity (written the first time it is asked for)
  await ok(server, "GET", "/agents", admin);
  // a call: phone events in the outbox (undeliverable: the event URL refuses), history records
  await post(`${V2}/dial/number/alice`, { destination: "1003" });
  await until(
    async () => {
      const history = await ok(server, "GET", `${V2}/history/alice?size=10`, admin);
      return history.body.data.entries.length > 0;
    },
    15_000,
    "alice's call in her history",
  );
  // the events are all published once the outbox stops growing
  let pending = -1;
  await until(
    async () => {
      const now = (await ok(server, "GET", `${V2}/events/deliveries`, admin)).body.pending;
      const settled = now === pending && now > 0;
      pending = now;
      return settled;
    },
    15_000,
    "the outbox settled",
  );
  return { admin, alice, subQualificationId, listUuid: demoList.uuid };
}

/** One API writer: it writes its records one after the other, marked `<prefix>000001`… */
class Writer {
  readonly started: number[] = [];
  readonly done: number[] = [];
  #stopped = false;
  #loop: Promise<void> | null = null;

  constructor(readonly prefix: string, readonly write: (marker: string) => Promise<void>) {}

  static marker(prefix: string, n: number): string {
    return `${prefix}${String(n).padStart(6, "0")}`;
  }

  start(): void {
    this.#loop = (async () => {
      for (let n = 1; !this.#stopped; n++) {
        this.started.push(performance.now());
        await this.write(Writer.marker(this.prefix, n));
        this.done.push(performance.now());
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#loop;
  }

  /** Records whose write had answered before `t`. */
  doneBefore(t: number): number {
    return this.done.filter((at) => at < t).length;
  }

  /** Records whose write had been sent before `t`. */
  startedBefore(t: number): number {
    return this.started.filter((at) => at < t).length;
  }
}

function writers(server: RunningServer, fixture: Fixture): Writer[] {
  const { admin, alice } = fixture;
  let second = 0;
  return [
    new Writer("wc", async (marker) => {
      await ok(server, "POST", `${V2}/contact/personal`, alice, {
        firstname: "Writer",
        lastname: marker,
      });
    }),
    new Writer("wa", async (marker) => {
      second++;
      const time = new Date(Date.UTC(2026, 1, 1) + second * 1000).toISOString()
        .replace("T", " ").slice(0, 19);
      await ok(server, "POST", `${V2}/call_qualification`, alice, {
        sub_qualification_id: fixture.subQualificationId,
        time,
        callid: marker,
        agent: 1,
        queue: 1,
      });
    }),
    new Writer("wu", async (marker) => {
      await ok(server, "POST", "/1.1/users", admin, { firstname: "Writer", username: marker });
    }),
    new Writer("wr", async (marker) => {
      const line = `0612345678||Writer|${marker}||${marker}||`;
      const answer = await ok(server, "POST", `${V2}/callback_lists/callback_requests/csv`, admin, {
        listUuid: fixture.listUuid,
        csv: [CALLBACK_HEADER, line, line, line].join("\n"),
      });
      assert.equal(answer.body.created.length, 3, JSON.stringify(answer.body));
    }),
  ];
}

/** Every read of every area, by path; by-id reads are listed in `items` (path → true). */
interface Reads {
  values: Map<string, unknown>;
  items: Set<string>;
}

const COLLECTIONS = [
  "/users",
  "/lines",
  "/endpoints/sip",
  "/endpoints/sccp",
  "/endpoints/custom",
  "/devices",
  "/extensions",
  "/voicemails",
  "/callpermissions",
  "/entities",
  "/labels",
  "/switchboards",
  "/agents",
  "/queues",
  "/webservice_users",
  "/call_qualifications",
  "/callback_lists",
  "/contexts",
];

const WRITER_MARKER = /\b(wc|wa|wu|wr)(\d{6})\b/g;

async function readEverything(server: RunningServer, fixture: Fixture): Promise<Reads> {
  const { admin, alice } = fixture;
  const values = new Map<string, unknown>();
  const items = new Set<string>();
  const json = async (path: string, token = admin) =>
    values.set(path, (await ok(server, "GET", path, token)).body);
  const item = async (path: string, token = admin) => {
    await json(path, token);
    items.add(path);
  };
  for (const collection of COLLECTIONS) {
    const path = `/1.1${collection}`;
    await json(path);
    const list = values.get(path) as { items: { id?: unknown; uuid?: unknown }[] };
    for (const record of list.items) {
      const id = record.id ?? record.uuid;
      await item(`${path}/${id}`);
      const isWriter = JSON.stringify(record).match(WRITER_MARKER);
      if (collection === "/users" && !isWriter) {
        for (const sub of ["lines", "services", "forwards", "push_tokens"]) {
          await item(`${path}/${id}/${sub}`);
        }
      }
    }
  }
  await json("/1.1/users?view=summary");
  await json("/1.1/lines_sip");
  await json("/1.1/wizard");
  values.set(
    "/1.1/users/export",
    await text(server, "GET", "/1.1/users/export", admin, { accept: "text/csv" }),
  );
  await json("/agents");
  // 2.0: alice's contacts, call qualifications and answers, callbacks, history, events
  await json(`${V2}/contact/personal`, alice);
  await json(`${V2}/contact/display/personal`, alice);
  values.set(
    `${V2}/contact/export/personal`,
    await text(server, "GET", `${V2}/contact/export/personal`, alice),
  );
  const contacts = values.get(`${V2}/contact/personal`) as { entries: { contact_id: string }[] };
  for (const { contact_id } of contacts.entries) {
    await item(`${V2}/contact/personal/${contact_id}`, alice);
  }
  await json(`${V2}/call_qualification/queue/1`, alice);
  const answers = `${V2}/call_qualification/csv/1/2000-01-01/2100-12-31`;
  values.set(answers, await text(server, "GET", answers, alice));
  await json(`${V2}/callback_lists`);
  const callbackLists = values.get(`${V2}/callback_lists`) as { uuid: string }[];
  for (const { uuid } of callbackLists) {
    values.set(
      `tickets of ${uuid}`,
      await text(server, "POST", `${V2}/callback_lists/callback_tickets/csv`, admin, {
        body: { listUuid: uuid },
      }),
    );
  }
  for (const username of ["alice", "bob", "carol"]) {
    await json(`${V2}/history/${username}?size=1000`);
  }
  const deliveries = (await ok(server, "GET", `${V2}/events/deliveries`, admin)).body;
  // the rest (lastError) moves on with every failed post
  values.set("events", { pending: deliveries.pending, deadLetters: deliveries.deadLetters });
  return { values, items };
}

/** The writer markers found anywhere in `reads`: prefix → the numbers seen, with their counts. */
function markers(reads: Reads): Map<string, Map<number, number>> {
  const found = new Map<string, Map<number, number>>();
  for (const value of reads.values.values()) {
    const textOf = typeof value === "string" ? value : JSON.stringify(value);
    for (const [, prefix, n] of textOf.matchAll(WRITER_MARKER)) {
      const numbers = found.get(prefix!) ?? new Map<number, number>();
      numbers.set(Number(n), (numbers.get(Number(n)) ?? 0) + 1);
      found.set(prefix!, numbers);
    }
  }
  return found;
}

/**
 * What the snapshot held: each writer's count, and the uuids of the writer's users (a summary view
 * of users shows no username) → their marker.
 */
interface Kept {
  counts: Map<string, number>;
  userMarkers: Map<string, string>;
}

/** True when `text` names a writer record beyond what the snapshot held. */
function beyond(text: string, kept: Kept): boolean {
  const past = (marker: string) => {
    const [, prefix, n] = marker.match(/^(w[a-z])(\d{6})$/)!;
    return Number(n) > (kept.counts.get(prefix!) ?? 0);
  };
  for (const [marker] of text.matchAll(WRITER_MARKER)) if (past(marker)) return true;
  for (const [uuid, marker] of kept.userMarkers) {
    if (text.includes(uuid) && past(marker)) return true;
  }
  return false;
}

/**
 * The text a list element is judged by: its own fields, without the lists of records it holds (a
 * callback list is kept while some of its requests are not).
 */
function ownText(element: unknown): string {
  if (element === null || typeof element !== "object" || Array.isArray(element)) {
    return JSON.stringify(element);
  }
  const isRecordList = (inner: unknown) =>
    Array.isArray(inner) && inner.some((item) => item !== null && typeof item === "object");
  return JSON.stringify(
    Object.fromEntries(Object.entries(element).filter(([, inner]) => !isRecordList(inner))),
  );
}

/** `value` without the writer records beyond `kept`: list elements, CSV lines, `total`s. */
function prune(value: unknown, kept: Kept): unknown {
  if (typeof value === "string") {
    if (!value.includes("\r\n")) return value;
    return value.split("\r\n").filter((line) => !beyond(line, kept)).join("\r\n");
  }
  if (Array.isArray(value)) {
    return value.filter((element) => !beyond(ownText(element), kept))
      .map((element) => prune(element, kept));
  }
  if (value !== null && typeof value === "object") {
    const object = Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [key, prune(inner, kept)]),
    );
    const { items, total } = value as { items?: unknown[]; total?: number };
    if (Array.isArray(items) && typeof total === "number") {
      object.total = total - (items.length - (object.items as unknown[]).length);
    }
    return object;
  }
  return value;
}

/** Every key and value of a store file, read through Deno KV. */
async function entriesOf(path: string): Promise<[Deno.KvKey, unknown][]> {
  const kv = await Deno.openKv(path);
  try {
    const entries = await Array.fromAsync(kv.list({ prefix: [] }));
    return entries.map((entry) => [entry.key, entry.value]);
  } finally {
    kv.close();
  }
}

/** Stored key (hex) → expiry (ms) of the entries of a store file that expire. */
function expiries(path: string): Map<string, number> {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const rows = db.prepare("SELECT hex(k) AS k, expiration_ms AS at FROM kv WHERE at >= 0")
      .all() as { k: string; at: number }[];
    return new Map(rows.map((row) => [row.k, row.at]));
  } finally {
    db.close();
  }
}

Deno.test("backup under write load, restore into a fresh store: the restored server answers as the source did at the snapshot", async (t) => {
  await withTempDir(async (dir) => {
    const env = {
      SVC_KV: `${dir}/source.kv`,
      SVC_DEMO: "true",
      SVC_ADMIN_LOGIN: "admin",
      SVC_ADMIN_PASSWORD: "admin-secret",
      SVC_EVENT_URL: `http://127.0.0.1:${await closedPort()}/events/`,
      SVC_SIM_ANSWER_MS: "50",
      SVC_SIM_TALK_MS: "300",
    };
    const backupFile = `${dir}/backups/svc.kvbackup`;
    const source = await startServer(env);
    let fixture: Fixture;
    let sourceReads: Reads;
    let load: Writer[];
    let backupStarted = 0;
    let backupEnded = 0;
    try {
      fixture = await fill(source);
      load = writers(source, fixture);
      for (const writer of load) writer.start();
      await sleep(1000);
      backupStarted = performance.now();
      const backup = await runTask("backup", [backupFile], { SVC_KV: env.SVC_KV });
      backupEnded = performance.now();
      assert.equal(backup.code, 0, backup.stderr);
      const summary = JSON.parse(backup.stdout);
      assert.equal(summary.file, backupFile);
      assert.match(summary.versionstamp, /^[0-9a-f]{20}$/);
      assert.ok(summary.entries > 100, backup.stdout);
      await sleep(500);
      await Promise.all(load.map((writer) => writer.stop()));
      for (const writer of load) {
        assert.ok(
          writer.doneBefore(backupStarted) > 0 &&
            writer.startedBefore(Infinity) > writer.startedBefore(backupEnded),
          `${writer.prefix} wrote before and after the backup`,
        );
      }
      sourceReads = await readEverything(source, fixture);
    } finally {
      const status = await source.stop();
      assert.equal(status.code, 0, source.stderrLines.join("\n"));
    }

    const restoredFile = `${dir}/restored/svc.kv`;
    await t.step("deno task restore loads the backup into a fresh store", async () => {
      const restore = await runTask("restore", [backupFile], { SVC_KV: restoredFile });
      assert.equal(restore.code, 0, restore.stderr);
      const summary = JSON.parse(restore.stdout);
      assert.equal(summary.cleared, 0);
      assert.ok(summary.written > 100);
    });

    await t.step("the restored store holds every entry of the backup, expiries kept", async () => {
      const copy = `${dir}/backup-copy.kv`;
      await Deno.copyFile(backupFile, copy);
      assert.deepEqual(await entriesOf(restoredFile), await entriesOf(copy));
      const before = expiries(backupFile);
      const after = expiries(restoredFile);
      assert.ok(before.size > 0, "the backup holds entries that expire (connections, events)");
      assert.deepEqual([...after.keys()].sort(), [...before.keys()].sort());
      for (const [key, at] of before) {
        assert.ok(Math.abs(after.get(key)! - at) < 10_000, `expiry of ${key}`);
      }
    });

    const restored = await startServer({ ...env, SVC_KV: restoredFile });
    try {
      // tokens made by the source stay valid: the signing secret is in the store
      const restoredReads = await readEverything(restored, fixture!);
      const found = markers(restoredReads);
      const users = (sourceReads!.values.get("/1.1/users") as {
        items: { uuid: string; username: string | null }[];
      }).items;
      const kept: Kept = {
        counts: new Map(),
        userMarkers: new Map(
          users.filter((user) => /^wu\d{6}$/.test(user.username ?? ""))
            .map((user) => [user.uuid, user.username!]),
        ),
      };

      await t.step("each writer's records are an exact prefix, no record half-written", () => {
        for (const writer of load!) {
          const numbers = found.get(writer.prefix) ?? new Map<number, number>();
          const count = numbers.size;
          assert.deepEqual(
            [...numbers.keys()].sort((a, b) => a - b),
            Array.from({ length: count }, (_, i) => i + 1),
            `${writer.prefix}: the first ${count} records, none missing`,
          );
          assert.ok(
            count >= writer.doneBefore(backupStarted),
            `${writer.prefix}: ${count} kept, ${writer.doneBefore(backupStarted)} written before`,
          );
          assert.ok(
            count <= writer.startedBefore(backupEnded),
            `${writer.prefix}: ${count} kept, ${
              writer.startedBefore(backupEnded)
            } sent before its end`,
          );
          kept.counts.set(writer.prefix, count);
        }
        // a callback import of three requests is one commit: all three or none
        const requests = (restoredReads.values.get(`${V2}/callback_lists`) as {
          callbacks: { description: string }[];
        }[]).flatMap((list) => list.callbacks.map((request) => request.description));
        for (let n = 1; n <= kept.counts.get("wr")!; n++) {
          const marker = Writer.marker("wr", n);
          assert.equal(requests.filter((d) => d === marker).length, 3, marker);
        }
      });

      await t.step("every read equals the source's at the snapshot's point", () => {
        const expected = new Map<string, unknown>();
        for (const [path, value] of sourceReads!.values) {
          // a by-id read of a record written after the snapshot: not in the restored store
          if (sourceReads!.items.has(path) && beyond(JSON.stringify(value), kept)) continue;
          expected.set(path, prune(value, kept));
        }
        assert.deepEqual([...restoredReads.values.keys()].sort(), [...expected.keys()].sort());
        for (const [path, value] of expected) {
          assert.deepEqual(restoredReads.values.get(path), value, path);
        }
        assert.ok(restoredReads.values.size > 100, `${restoredReads.values.size} reads compared`);
      });
    } finally {
      const status = await restored.stop();
      assert.equal(status.code, 0, restored.stderrLines.join("\n"));
    }
  });
});

Deno.test("backup and restore refuse what they cannot do safely", async (t) => {
  await withTempDir(async (dir) => {
    const kv = `${dir}/svc.kv`;
    const server = await startServer({ SVC_KV: kv, SVC_DEMO: "true" });
    await server.stop();
    const file = `${dir}/svc.kvbackup`;
    assert.equal((await runTask("backup", [file], { SVC_KV: kv })).code, 0);

    await t.step("backup: an existing file without --force, then with it", async () => {
      const again = await runTask("backup", [file], { SVC_KV: kv });
      assert.equal(again.code, 1);
      assert.match(again.stderr, /exists: give another name, or --force/);
      assert.equal((await runTask("backup", [file, "--force"], { SVC_KV: kv })).code, 0);
    });

    await t.step("backup: a store that is not a local file, or none", async () => {
      for (const location of [":memory:", "https://kv.example.com/db"]) {
        const result = await runTask("backup", [`${dir}/other`], { SVC_KV: location });
        assert.equal(result.code, 1);
        assert.match(result.stderr, /a backup is taken of a local store file/);
      }
      const missing = await runTask("backup", [`${dir}/other`], { SVC_KV: `${dir}/none.kv` });
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /there is no store at/);
      const usage = await runTask("backup", [], { SVC_KV: kv });
      assert.equal(usage.code, 2);
      assert.match(usage.stderr, /usage: deno task backup FILE \[--force\]/);
    });

    await t.step("restore: a non-empty store without --force, then with it", async () => {
      const target = `${dir}/target.kv`;
      assert.equal((await runTask("restore", [file], { SVC_KV: target })).code, 0);
      const refused = await runTask("restore", [file], { SVC_KV: target });
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /is not empty: restore into an empty store, or give --force/);
      const forced = await runTask("restore", [file, "--force"], { SVC_KV: target });
      assert.equal(forced.code, 0, forced.stderr);
      const summary = JSON.parse(forced.stdout);
      assert.equal(summary.cleared, summary.written);
      assert.deepEqual(await entriesOf(target), await entriesOf(kv));
    });

    await t.step("restore: a file that is not a backup", async () => {
      const result = await runTask("restore", [kv], { SVC_KV: `${dir}/elsewhere.kv` });
      assert.equal(result.code, 1);
      assert.match(result.stderr, /is not an svc backup/);
      const missing = await runTask("restore", [`${dir}/nothing`], { SVC_KV: `${dir}/x.kv` });
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /there is no backup at/);
    });
  });
});
