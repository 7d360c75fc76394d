/**
 * The writer of the Asterisk files: what it writes and reloads after each kind of change, its
 * retries, and, with its real timers, how fast a `/1.1` change reaches the files and how a
 * 5,000-row CSV import is written and reloaded once.
 */
import assert from "node:assert/strict";
import {
  ASTERISK_FILES,
  ConfigWriter,
  type ConfigWriterOptions,
  RELOAD_INTERVAL_MS,
} from "../../../../lib/platform/asterisk/config_writer.ts";
import { createLogger } from "../../../../lib/log.ts";
import { type Confd, setupConfd, type TestContext } from "../../../helpers.ts";

const ALL_FILES = [
  "pjsip_svc.conf",
  "extensions_svc.conf",
  "queues_svc.conf",
  "voicemail_svc.conf",
  "confbridge_svc.conf",
];
const ALL_MODULES = [
  "res_pjsip.so",
  "pbx_config.so",
  "app_queue.so",
  "app_voicemail.so",
  "app_confbridge.so",
];

interface Harness {
  ctx: TestContext;
  api: Confd;
  dir: string;
  writer: ConfigWriter;
  /** Every `reload` call's modules, failed ones included. */
  reloads: string[][];
  /** When each `reload` call was made (`Date.now()`). */
  reloadTimes: number[];
  /** Calls to fail before `reload` succeeds again. */
  failReloads: number;
  leader: boolean;
  logs: string[];
  read(file: string): Promise<string>;
  done(): Promise<void>;
}

async function harness(options: Partial<ConfigWriterOptions> = {}): Promise<Harness> {
  const { ctx, api } = await setupConfd();
  const dir = `${await Deno.makeTempDir({ prefix: "svc_asterisk_" })}/conf`;
  const logs: string[] = [];
  const h: Harness = {
    ctx,
    api,
    dir,
    reloads: [],
    reloadTimes: [],
    failReloads: 0,
    leader: true,
    logs,
    writer: new ConfigWriter({
      store: ctx.services.store,
      dir,
      logger: createLogger("debug", (line) => logs.push(line)),
      reload(modules) {
        h.reloads.push(modules);
        h.reloadTimes.push(Date.now());
        if (h.failReloads > 0) {
          h.failReloads--;
          return Promise.reject(new Error("AMI not connected"));
        }
        return Promise.resolve();
      },
      isLeader: () => h.leader,
      ...options,
    }),
    read: (file) => Deno.readTextFile(`${dir}/${file}`),
    async done() {
      await h.writer.close();
      await Deno.remove(dir.replace(/\/conf$/, ""), { recursive: true });
    },
  };
  return h;
}

async function created(api: Confd, path: string, body: unknown): Promise<{ id: number }> {
  return await api.create(path, body);
}

async function call(api: Confd, method: "PUT" | "DELETE", path: string) {
  const response = await api.call(method, path);
  assert.equal(response.status, 204, `${method} ${path}: ${await response.text()}`);
}

/** A user with a SIP line (endpoint named after the user) holding `exten` in `default`. */
async function phoneUser(api: Confd, username: string, exten: string) {
  const user = await created(api, "/users", { firstname: username, username });
  const line = await created(api, "/lines", { context: "default" });
  const extension = await created(api, "/extensions", { exten, context: "default" });
  const sip = await created(api, "/endpoints/sip", { username, secret: `${username}-secret` });
  await call(api, "PUT", `/lines/${line.id}/extensions/${extension.id}`);
  await call(api, "PUT", `/lines/${line.id}/endpoints/sip/${sip.id}`);
  await call(api, "PUT", `/users/${user.id}/lines/${line.id}`);
  return { user: user.id, line: line.id, extension: extension.id, sip: sip.id };
}

async function listDir(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  return names.sort();
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `condition` holds, checking every 20 ms; fails after `ms`. */
async function until(condition: () => boolean | Promise<boolean>, ms: number, what: string) {
  const deadline = Date.now() + ms;
  while (!await condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(20);
  }
}

Deno.test("sync writes what changed and reloads only the modules concerned", async (t) => {
  const h = await harness();
  try {
    await phoneUser(h.api, "alice", "1001");
    const bob = await phoneUser(h.api, "bob", "1002");
    await created(h.api, "/queues", { name: "support", number: "3001" });

    await t.step("the first sync writes the 3 files and reloads the 3 modules", async () => {
      const result = await h.writer.sync();
      assert.deepEqual(result, { written: ALL_FILES, reloaded: ALL_MODULES, pending: [] });
      assert.deepEqual(h.reloads, [ALL_MODULES]);
      assert.match(await h.read("pjsip_svc.conf"), /\n\[bob\]\ntype = endpoint\n/);
      assert.match(await h.read("extensions_svc.conf"), /\nexten => 1002,hint,PJSIP\/bob\n/);
      assert.match(await h.read("queues_svc.conf"), /\n\[support\]\n/);
    });
    await t.step("nothing changed: nothing written, nothing reloaded", async () => {
      assert.deepEqual(await h.writer.sync(), { written: [], reloaded: [], pending: [] });
      assert.equal(h.reloads.length, 1);
    });
    await t.step("a new user: pjsip and extensions only, queues untouched", async () => {
      const before = (await Deno.stat(`${h.dir}/queues_svc.conf`)).mtime;
      await phoneUser(h.api, "carol", "1003");
      const result = await h.writer.sync();
      assert.deepEqual(result.written, ["pjsip_svc.conf", "extensions_svc.conf"]);
      assert.deepEqual(result.reloaded, ["res_pjsip.so", "pbx_config.so"]);
      assert.match(await h.read("pjsip_svc.conf"), /\n\[carol\]\n/);
      assert.deepEqual((await Deno.stat(`${h.dir}/queues_svc.conf`)).mtime, before);
    });
    await t.step("a queue member added: the files do not change, nothing reloaded", async () => {
      const agent = await created(h.api, "/agents", { number: "8001" });
      await call(h.api, "PUT", `/queues/1/members/agents/${agent.id}`);
      assert.deepEqual(await h.writer.sync(), { written: [], reloaded: [], pending: [] });
    });
    await t.step("a deleted user: its endpoint and extension are gone", async () => {
      await call(h.api, "DELETE", `/users/${bob.user}/lines/${bob.line}`);
      await call(h.api, "DELETE", `/lines/${bob.line}/extensions/${bob.extension}`);
      await call(h.api, "DELETE", `/lines/${bob.line}/endpoints/sip/${bob.sip}`);
      await call(h.api, "DELETE", `/users/${bob.user}`);
      await call(h.api, "DELETE", `/lines/${bob.line}`);
      await call(h.api, "DELETE", `/extensions/${bob.extension}`);
      await call(h.api, "DELETE", `/endpoints/sip/${bob.sip}`);
      const result = await h.writer.sync();
      assert.deepEqual(result.reloaded, ["res_pjsip.so", "pbx_config.so"]);
      const pjsip = await h.read("pjsip_svc.conf");
      assert.ok(!pjsip.includes("bob"), pjsip);
      assert.ok(pjsip.includes("[alice]"));
      assert.ok(!(await h.read("extensions_svc.conf")).includes("1002"));
    });
    await t.step("writes are atomic: only the 3 files, no temporary file left", async () => {
      assert.deepEqual(await listDir(h.dir), [...ALL_FILES].sort());
    });
    await t.step("the files hold SIP secrets: not readable by others", async () => {
      for (const file of ALL_FILES) {
        assert.equal((await Deno.stat(`${h.dir}/${file}`)).mode! & 0o007, 0, file);
      }
    });
    await t.step("a file changed by hand is put back on the next sync", async () => {
      await Deno.writeTextFile(`${h.dir}/queues_svc.conf`, "; edited\n");
      const result = await h.writer.sync();
      assert.deepEqual(result.written, ["queues_svc.conf"]);
      assert.deepEqual(result.reloaded, ["app_queue.so"]);
    });
  } finally {
    await h.done();
  }
});

Deno.test("a failed reload is kept and retried; a failed write is retried", async (t) => {
  const h = await harness();
  try {
    await phoneUser(h.api, "alice", "1001");
    await t.step("the reload throws: files written, modules still pending", async () => {
      h.failReloads = 1;
      const result = await h.writer.sync();
      assert.deepEqual(result, { written: ALL_FILES, reloaded: [], pending: ALL_MODULES });
      assert.ok(h.logs.some((line) => line.includes("asterisk config: reload failed")));
    });
    await t.step(
      "a change meanwhile: the pending modules are reloaded with the new ones",
      async () => {
        await created(h.api, "/queues", { name: "support", number: "3001" });
        h.failReloads = 1;
        const failed = await h.writer.sync();
        assert.deepEqual(failed.written, ["extensions_svc.conf", "queues_svc.conf"]);
        assert.deepEqual(failed.pending, ALL_MODULES);
        const result = await h.writer.sync();
        assert.deepEqual(result, { written: [], reloaded: ALL_MODULES, pending: [] });
      },
    );
    await t.step("with the timers, a failing reload is retried by itself", async () => {
      await phoneUser(h.api, "bob", "1002");
      h.failReloads = 2;
      const calls = h.reloads.length;
      h.writer.start();
      await until(() => h.reloads.length === calls + 3, 5000, "two failures, then a success");
      assert.deepEqual(h.reloads.slice(calls), [
        ["res_pjsip.so", "pbx_config.so"],
        ["res_pjsip.so", "pbx_config.so"],
        ["res_pjsip.so", "pbx_config.so"],
      ]);
      await h.writer.close();
    });
  } finally {
    await h.done();
  }

  const broken = await harness();
  try {
    await t.step(
      "the directory cannot be made: logged, nothing lost, written once it can",
      async () => {
        await Deno.writeTextFile(broken.dir, "a file where the directory should be");
        const failed = await broken.writer.sync();
        assert.deepEqual(failed, { written: [], reloaded: [], pending: [] });
        assert.ok(broken.logs.some((line) => line.includes("asterisk config: files not written")));
        await Deno.remove(broken.dir);
        const result = await broken.writer.sync();
        assert.deepEqual(result.written, ALL_FILES);
        assert.deepEqual(result.reloaded, ALL_MODULES);
      },
    );
  } finally {
    await broken.done();
  }
});

Deno.test("only the lease holder writes", async (t) => {
  const h = await harness({ pollMs: 50, quietMs: 50 });
  try {
    h.leader = false;
    await phoneUser(h.api, "alice", "1001");
    await t.step("not the leader: sync and the timers write nothing", async () => {
      assert.deepEqual(await h.writer.sync(), { written: [], reloaded: [], pending: [] });
      h.writer.start();
      await sleep(300);
      await assert.rejects(Deno.stat(h.dir), Deno.errors.NotFound);
      assert.deepEqual(h.reloads, []);
    });
    await t.step("once it holds the lease, the files are written", async () => {
      h.leader = true;
      await until(() => h.reloads.length === 1, 2000, "the first write");
      assert.deepEqual(h.reloads, [ALL_MODULES]);
      assert.deepEqual(await listDir(h.dir), [...ALL_FILES].sort());
    });
  } finally {
    await h.done();
  }
});

Deno.test("with its real timers: a /1.1 change reaches the files within 2 s", async (t) => {
  const h = await harness();
  try {
    h.writer.start();
    await until(() => h.reloads.length === 1, 2000, "the files at start");
    await t.step("a new user with a SIP line and an extension", async () => {
      await phoneUser(h.api, "alice", "1001");
      const answered = Date.now();
      await until(
        async () => (await h.read("pjsip_svc.conf")).includes("[alice]") && h.reloads.length === 2,
        2000,
        "alice in the files and reloaded",
      );
      assert.ok(Date.now() - answered < 2000);
      assert.match(await h.read("extensions_svc.conf"), /exten => 1001,hint,PJSIP\/alice/);
      assert.deepEqual(h.reloads[1], ["res_pjsip.so", "pbx_config.so"]);
    });
    await t.step(
      "a user's forward destination is not configuration: nothing is rewritten",
      async () => {
        const response = await h.api.put("/users/1/forwards/unconditional", {
          enabled: true,
          destination: "1002",
        });
        assert.equal(response.status, 204, await response.text());
        await sleep(800);
        assert.equal(h.reloads.length, 2);
      },
    );
  } finally {
    await h.done();
  }
});

Deno.test("with Asterisk down a long while: changes still reach the files at once", async () => {
  const h = await harness();
  try {
    h.failReloads = Infinity; // every reload fails: its backoff grows
    h.writer.start();
    await until(() => h.reloads.length >= 1, 2000, "the files at start");
    await sleep(3000); // reloads now wait seconds between attempts
    await phoneUser(h.api, "alice", "1001");
    const answered = Date.now();
    await until(
      async () => (await h.read("pjsip_svc.conf")).includes("[alice]"),
      2000,
      "alice in the file",
    );
    assert.ok(Date.now() - answered < 2000);
    h.failReloads = 0;
    const result = await h.writer.sync(); // what the adapter does once Asterisk is back
    assert.deepEqual(result.reloaded, ALL_MODULES);
  } finally {
    await h.done();
  }
});

Deno.test("a 5,000-row users CSV import is written and reloaded once", async (t) => {
  // the import's writes last longer than this: they change the records once, by its last commit
  const h = await harness({ maxDelayMs: 100 });
  try {
    await created(h.api, "/contexts", {
      name: "big",
      user_ranges: [{ start: "100000", end: "199999" }],
    });
    h.writer.start();
    await until(() => h.reloads.length === 1, 2000, "the files at start");
    const writes = () => h.logs.filter((line) => line.includes('"asterisk config written"')).length;
    const rows = Array.from({ length: 5000 }, (_, i) => i + 1);

    await t.step("POST: 5,000 users with a SIP line and an extension", async () => {
      const csv = [
        "firstname,lastname,username,line_protocol,context,exten,sip_username,sip_secret",
        ...rows.map((n) => `User,${n},user${n},sip,big,${100000 + n},sip${n},secret-${n}`),
      ].join("\n");
      const response = await h.api.call("POST", "/users/import", csv, {
        "Content-Type": "text/csv",
      });
      assert.equal(response.status, 201, (await response.text()).slice(0, 500));
      await until(() => h.reloads.length >= 2, 5000, "the import's reload");
      await sleep(1000); // longer than the writer waits for a burst to settle
      assert.equal(h.reloads.length, 2);
      assert.equal(writes(), 2);
      assert.deepEqual(h.reloads[1], ["res_pjsip.so", "pbx_config.so"]);
      const pjsip = await h.read("pjsip_svc.conf");
      assert.equal(pjsip.match(/\ntype = endpoint\n/g)?.length, 5000);
      assert.ok(pjsip.includes('callerid = "User 5000" <105000>'));
    });
    await t.step("PUT: 5,000 users' caller ids changed", async () => {
      const exported = await h.api.get("/users/export", { Accept: "text/csv" });
      const [header, ...lines] = (await exported.text()).trim().split("\r\n");
      const columns = header!.split(",");
      const uuid = columns.indexOf("uuid");
      const csv = [
        "uuid,caller_id",
        ...lines.map((line, i) => `${line.split(",")[uuid]},"""Agent ${i + 1}"""`),
      ].join("\n");
      const response = await h.api.call("PUT", "/users/import", csv, {
        "Content-Type": "text/csv",
      });
      assert.equal(response.status, 200, (await response.text()).slice(0, 500));
      await until(() => h.reloads.length >= 3, 5000, "the update's reload");
      await sleep(1000);
      assert.equal(h.reloads.length, 3);
      assert.equal(writes(), 3);
      assert.deepEqual(h.reloads[2], ["res_pjsip.so"]);
      assert.ok((await h.read("pjsip_svc.conf")).includes('callerid = "Agent 5000" <105000>'));
    });
  } finally {
    await h.done();
  }
});

Deno.test("a module is reloaded at most once a second, the first at once", async (t) => {
  // a short quiet time: each change of the burst below is written on its own
  const h = await harness({ quietMs: 50 });
  try {
    h.writer.start();
    await until(() => h.reloads.length === 1, 2000, "the files at start");
    await sleep(RELOAD_INTERVAL_MS); // a quiet second
    await t.step("after a quiet second: reloaded as soon as the burst settles", async () => {
      await phoneUser(h.api, "alice", "1001");
      const answered = Date.now();
      await until(() => h.reloads.length === 2, 2000, "alice's reload");
      // the writer's quiet time and ticks, no reload spacing
      assert.ok(h.reloadTimes[1]! - answered < 500, `${h.reloadTimes[1]! - answered} ms`);
    });
    await t.step("a change right after: its reload waits until a second has passed", async () => {
      await phoneUser(h.api, "bob", "1002");
      await until(() => h.reloads.length === 3, 3000, "bob's reload");
      assert.deepEqual(h.reloads[2], ["res_pjsip.so", "pbx_config.so"]);
      assert.ok(h.reloadTimes[2]! - h.reloadTimes[1]! >= RELOAD_INTERVAL_MS);
      assert.ok(h.reloadTimes[2]! - h.reloadTimes[1]! < RELOAD_INTERVAL_MS + 500);
      assert.match(await h.read("pjsip_svc.conf"), /\n\[bob\]\n/);
    });
    await t.step("a burst of changes: one reload per module per second at most", async () => {
      const before = h.reloads.length;
      const writes = () =>
        h.logs.filter((line) => line.includes('"asterisk config written"')).length;
      const writesBefore = writes();
      for (const [i, name] of ["carol", "dave", "erin", "frank"].entries()) {
        await phoneUser(h.api, name, String(1003 + i));
        await sleep(250); // longer than the quiet time and a tick
      }
      await until(
        async () =>
          (await h.read("pjsip_svc.conf")).includes("[frank]") && h.reloads.length > before,
        3000,
        "frank's reload",
      );
      await sleep(RELOAD_INTERVAL_MS + 300);
      assert.ok((await h.read("extensions_svc.conf")).includes("exten => 1006,hint,PJSIP/frank"));
      for (const module of ["res_pjsip.so", "pbx_config.so"]) {
        const times = h.reloadTimes.filter((_, i) => h.reloads[i]!.includes(module));
        for (let i = 1; i < times.length; i++) {
          assert.ok(times[i]! - times[i - 1]! >= RELOAD_INTERVAL_MS, `${module}: ${times}`);
        }
      }
      assert.deepEqual(h.reloads.at(-1), ["res_pjsip.so", "pbx_config.so"]);
      // each change was written on its own, reloads were gathered
      assert.ok(writes() - writesBefore >= 3, `${writes() - writesBefore} writes`);
      assert.ok(
        h.reloads.length - before < writes() - writesBefore,
        `${h.reloads.length - before}`,
      );
    });
  } finally {
    await h.done();
  }
});

Deno.test("sync() waits out the second before reloading a module again", async () => {
  const h = await harness();
  try {
    await phoneUser(h.api, "alice", "1001");
    assert.deepEqual((await h.writer.sync()).reloaded, ALL_MODULES);
    await phoneUser(h.api, "bob", "1002");
    const result = await h.writer.sync();
    assert.deepEqual(result, {
      written: ["pjsip_svc.conf", "extensions_svc.conf"],
      reloaded: ["res_pjsip.so", "pbx_config.so"],
      pending: [],
    });
    assert.ok(h.reloadTimes[1]! - h.reloadTimes[0]! >= RELOAD_INTERVAL_MS);
  } finally {
    await h.done();
  }
});

Deno.test("at start, with Asterisk unreachable and nothing configured: valid files", async () => {
  const h = await harness();
  try {
    h.failReloads = Infinity;
    h.writer.start();
    await until(() => h.reloads.length >= 1, 2000, "the first reload attempt");
    // written before the reload was tried, and still there after it failed
    assert.deepEqual(await listDir(h.dir), [...ALL_FILES].sort());
    assert.ok(h.logs.some((line) => line.includes("asterisk config: reload failed")));
    for (
      const file of [
        "pjsip_svc.conf",
        "queues_svc.conf",
        "voicemail_svc.conf",
        "confbridge_svc.conf",
      ]
    ) {
      const text = await h.read(file);
      assert.match(text, /^; \w+_svc\.conf: generated by svc/);
      assert.ok(text.split("\n").every((row) => row === "" || row.startsWith(";")), text);
    }
    const extensions = await h.read("extensions_svc.conf");
    assert.deepEqual(extensions.split("\n").filter((row) => row.startsWith("[")), [
      "[svc-user]",
      "[svc-hold]",
      "[svc-wait]",
      "[svc-consult]",
      "[svc-conference]",
      "[svc-room-invite]",
      "[svc-listen]",
      "[svc-agent]",
      "[svc-queue-out]",
      "[svc-queue-in]",
    ]);
    assert.deepEqual(h.reloads[0], ALL_MODULES);
  } finally {
    await h.done();
  }
});

Deno.test("the files and modules are named as the operator includes them", () => {
  assert.deepEqual(ASTERISK_FILES.map((file) => file.name), ALL_FILES);
  assert.deepEqual(ASTERISK_FILES.map((file) => file.module), ALL_MODULES);
});
