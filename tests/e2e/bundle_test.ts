/**
 * `deno task bundle` gives a self-contained bundle that serves: `dist/svc.js` and the files it
 * imports (`dist/svc-parts/`) run without the repository's deno.json (`--no-config`) and answer
 * `GET /health`; copied out of the repository, they still tell the revision they were built from
 * (`GET /version`) and serve `GET /metrics` (prom-client bundled in). `tools/finish_bundle.ts` left
 * them in ASCII, without `node:module`, the docs files gzipped, and the code only `import()`
 * reaches (the API areas, the YAML writer, the CSV parser, single sign-on, the Asterisk adapter,
 * the demo data) in files read at their first use, where it serves as from the sources. It also runs on Asterisk
 * (the AMI replay).
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import denoJson from "../../deno.json" with { type: "json" };
import { REVISION_SLOT } from "../../lib/version.ts";
import { copyBundle, writtenImports } from "../../tools/finish_bundle.ts";
import { SWAGGER_UI_FILES } from "../../routes/docs_assets.ts";
import { SUPERVISION_FILES } from "../../web/supervision/assets.ts";
import { parseExposition, valueOf } from "../prometheus.ts";
import { repoRoot, runServerToExit, startServer, withTempDir } from "./server.ts";
import { startAmiReplay } from "../peers/ami_replay.ts";
import { login, until } from "./svc_http.ts";
import { DEMO_USERS } from "../../lib/demo.ts";

/** Runs the bundle at `file` without the repository's deno.json. */
const bundleArgs = (file: string) => [
  "run",
  "--quiet",
  "-A",
  "--no-config",
  "--unstable-kv",
  "--unstable-cron",
  file,
];

const METRICS_TOKEN = "bundle-test-metrics-token-0123456789";

Deno.test("the bundle builds, serves GET /health, and run elsewhere tells its revision", async (t) => {
  const build = await new Deno.Command(Deno.execPath(), {
    args: ["task", "bundle"],
    cwd: repoRoot,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(120_000),
  }).output();
  assert.ok(build.success, `deno task bundle failed:\n${new TextDecoder().decode(build.stderr)}`);
  const bundle = new URL("dist/svc.js", repoRoot);
  assert.ok((await Deno.stat(bundle)).isFile, "dist/svc.js is missing");

  const parts = [...Deno.readDirSync(new URL("dist/svc-parts/", repoRoot))].map(({ name }) => name);
  const texts = [bundle, ...parts.map((name) => new URL(`dist/svc-parts/${name}`, repoRoot))]
    .map((file) => Deno.readTextFileSync(file));

  await t.step(
    "finished: ASCII only, Node's layer not loaded at start, start compiled",
    async () => {
      const text = await Deno.readTextFile(bundle);
      for (const file of texts) {
        // V8 keeps a source with one character outside ASCII in two bytes per character
        assert.equal(file.search(/[\u0080-\uffff]/), -1, "a character outside ASCII");
        // the bundler's createRequire imports node:module, which loads Deno's Node layer (8 MB)
        assert.ok(!file.includes('from "node:module"'), "node:module imported");
        assert.ok(!file.includes(REVISION_SLOT), "the revision slot is stamped");
        // Deno reads every file a written name in import() names at each start, run or not
        assert.deepEqual(writtenImports(file), [], "an import() of a written name");
      }
      // what every start runs is written where V8 compiles it with the file (tools/eager_start.ts),
      // what none runs is left as it was
      assert.match(text, /^var buildApp = \(function \(services, /m);
      // (the configuration file's reader: only a start with SVC_CONFIG runs it)
      assert.match(text, /^function readConfigFile\(/m);
      // the API areas, the Asterisk adapter, the docs page's files, the demo data: each a file of
      // its own
      for (const name of ["areas", "mod", "docs_assets", "js-yaml", "papaparse", "oidc", "demo"]) {
        assert.equal(parts.filter((part) => part.startsWith(`${name}-`)).length, 1, name);
      }
    },
  );

  await t.step(
    "a start reads no API area: without their file, /health answers, the API 500",
    async () => {
      await withTempDir(async (dir) => {
        const copy = await copyBundle(fileURLToPath(bundle), `${dir}/svc`);
        const areas = `${dir}/svc/svc-parts/${parts.find((name) => name.startsWith("areas-"))}`;
        await Deno.remove(areas);
        const server = await startServer({ SVC_KV: ":memory:" }, { args: bundleArgs(copy) });
        try {
          assert.equal((await fetch(`${server.baseUrl}/health`)).status, 200);
          // the first request needing an area fails on the missing file, saying so
          const failed = await fetch(`${server.baseUrl}/1.1/users`);
          assert.equal(failed.status, 500);
          assert.equal((await failed.json()).error, "NotHandledError");
          assert.equal((await fetch(`${server.baseUrl}/health`)).status, 200);
        } finally {
          await server.stop();
        }
      });
    },
  );

  await t.step(
    "a start reads no zod: without the file holding it, /health answers, the API 500",
    async () => {
      // the bundler names each module's code by its path: zod's are below its package
      const zodParts = parts.filter((_, n) =>
        /^\/\/ \S*\/zod\/(?:\d[^/]*\/)?v4\//m.test(texts[n + 1]!)
      );
      assert.equal(zodParts.length, 1, `zod in ${zodParts.join(", ")}`);
      await withTempDir(async (dir) => {
        const copy = await copyBundle(fileURLToPath(bundle), `${dir}/svc`);
        await Deno.remove(`${dir}/svc/svc-parts/${zodParts[0]}`);
        const server = await startServer({ SVC_KV: ":memory:" }, { args: bundleArgs(copy) });
        try {
          assert.equal((await fetch(`${server.baseUrl}/health`)).status, 200);
          // zod loads with the areas, at the first request needing one
          const failed = await fetch(`${server.baseUrl}/1.1/users`);
          assert.equal(failed.status, 500);
          await failed.body?.cancel();
        } finally {
          await server.stop();
        }
      });
    },
  );

  await t.step(
    "the OpenAPI document's file missing: its routes 500, the API answers",
    async () => {
      await withTempDir(async (dir) => {
        const copy = await copyBundle(fileURLToPath(bundle), `${dir}/svc`);
        const part = parts.find((name) => name.startsWith("openapi_document-"));
        assert.ok(part, "the OpenAPI document is a file of its own");
        await Deno.remove(`${dir}/svc/svc-parts/${part}`);
        const server = await startServer({ SVC_KV: ":memory:" }, { args: bundleArgs(copy) });
        try {
          for (const path of ["/svc/api/2.0/openapi.json", "/1.1/api/api.yml"]) {
            const failed = await fetch(`${server.baseUrl}${path}`);
            assert.equal(failed.status, 500, path);
            assert.equal((await failed.json()).error, "NotHandledError", path);
          }
          const users = await fetch(`${server.baseUrl}/1.1/users`);
          assert.equal(users.status, 401);
          await users.body?.cancel();
        } finally {
          await server.stop();
        }
      });
    },
  );

  await t.step("in demo mode: the demo data and logins, from their file", async () => {
    const server = await startServer({ SVC_KV: ":memory:", SVC_DEMO: "true" }, {
      args: bundleArgs("dist/svc.js"),
    });
    try {
      await server.waitForLine("stdout", (line) => line.startsWith("svc demo is running on "));
      const [user] = DEMO_USERS;
      const token = await login(server, "login", user.username, user.password);
      const contacts = await fetch(`${server.baseUrl}/svc/api/2.0/contact/personal`, {
        headers: { Authorization: `Bearer ${token}` },
      });
      assert.equal(contacts.status, 200);
      await contacts.body?.cancel();
    } finally {
      await server.stop();
    }
  });

  await t.step("in the repository: GET /health", async () => {
    // --no-config: the bundle must not need the repository's deno.json or its dependencies.
    const server = await startServer({ SVC_KV: ":memory:" }, { args: bundleArgs("dist/svc.js") });
    try {
      const response = await fetch(`${server.baseUrl}/health`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
      assert.deepEqual(await response.json(), { status: "ok" });
      // Swagger UI's large files, stored gzipped in the bundle: the same bytes, either way
      for (const [name, text] of Object.entries(SWAGGER_UI_FILES)) {
        const url = `${server.baseUrl}/docs/${name}`;
        const plain = await fetch(url, { headers: { "Accept-Encoding": "identity" } });
        assert.equal(plain.headers.get("content-encoding"), null, name);
        assert.equal(await plain.text(), text.text, name);
        // fetch asks for gzip and decodes it: what it reads is the file itself
        const gzipped = await fetch(url);
        if (text.text.length > 100_000) { // the ones stored gzipped
          assert.equal(gzipped.headers.get("content-encoding"), "gzip", name);
        }
        assert.equal(await gzipped.text(), text.text, name);
      }
    } finally {
      await server.stop();
    }
  });

  await t.step(
    "the code loaded on first use: a YAML document, a CSV import, OpenID Connect",
    async () => {
      const admin = { login: "bundle-admin", password: "bundle-admin-password" };
      const server = await startServer({
        SVC_KV: ":memory:",
        SVC_ADMIN_LOGIN: admin.login,
        SVC_ADMIN_PASSWORD: admin.password,
        SVC_OIDC_ISSUER: "http://127.0.0.1:9/oidc",
      }, { args: bundleArgs("dist/svc.js") });
      try {
        const yaml = await fetch(`${server.baseUrl}/1.1/api/api.yml`);
        assert.equal(yaml.status, 200);
        assert.match(await yaml.text(), /^openapi: 3\.1\.0\n/);
        const token = await login(server, "webservice", admin.login, admin.password);
        const imported = await fetch(`${server.baseUrl}/1.1/users/import`, {
          method: "POST",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "text/csv" },
          body: 'firstname,lastname\r\n"Ada, Jr",Lovelace\r\n',
        });
        assert.equal(imported.status, 201, await imported.clone().text());
        const { created } = await imported.json();
        assert.equal(created.length, 1);
        const exported = await fetch(`${server.baseUrl}/1.1/users/export`, {
          headers: { Authorization: `Bearer ${token}`, Accept: "text/csv" },
        });
        assert.match(await exported.text(), /\r\n[0-9a-f-]{36},"Ada, Jr",Lovelace,/);
        const oidc = await fetch(`${server.baseUrl}/svc/api/2.0/auth/oidc?token=not-a-jwt`);
        assert.equal(oidc.status, 403);
        assert.equal((await oidc.json()).error, "OidcAuthenticationFailed");
      } finally {
        await server.stop();
      }
    },
  );

  await t.step("on Asterisk: ready on the AMI replay", async () => {
    const replay = await startAmiReplay({ connections: ["02-dial-answered"] });
    try {
      await withTempDir(async (dir) => {
        const server = await startServer({
          SVC_KV: ":memory:",
          SVC_PLATFORM: "asterisk",
          SVC_AMI_PORT: String(replay.port),
          SVC_AMI_USERNAME: "admin",
          SVC_AMI_SECRET: "admin",
          SVC_ASTERISK_CONFIG_DIR: dir,
        }, { args: bundleArgs("dist/svc.js") });
        try {
          const ready = async () => {
            const response = await fetch(`${server.baseUrl}/ready`);
            return (await response.json()).status === "ready";
          };
          await until(ready, 5_000, "ready on the replayed AMI session");
        } finally {
          await server.stop();
        }
      });
    } finally {
      await replay.close();
    }
  });

  await t.step("copied out of the repository: GET /version and GET /metrics", async () => {
    const git = await new Deno.Command("git", {
      args: ["rev-parse", "HEAD"],
      cwd: repoRoot,
      stdout: "piped",
    }).output();
    assert.ok(git.success, "git rev-parse HEAD failed");
    const revision = new TextDecoder().decode(git.stdout).trim();
    await withTempDir(async (dir) => {
      await copyBundle(fileURLToPath(bundle), dir);
      const server = await startServer(
        { SVC_KV: ":memory:", SVC_METRICS_TOKEN: METRICS_TOKEN },
        { args: bundleArgs("svc.js"), cwd: dir },
      );
      try {
        const version = await fetch(`${server.baseUrl}/version`);
        assert.equal(version.status, 200);
        assert.deepEqual(await version.json(), { version: denoJson.version, revision });

        const scraped = await fetch(`${server.baseUrl}/metrics`, {
          headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
        });
        assert.equal(scraped.status, 200);
        const families = parseExposition(await scraped.text());
        const labels = { method: "GET", route: "/version", status: "200" };
        assert.equal(valueOf(families, "svc_http_request_duration_seconds_count", labels), 1);
        assert.equal(valueOf(families, "svc_build_info", { revision }), 1);
        assert.ok(valueOf(families, "process_resident_memory_bytes") > 0);

        // the supervisors' wallboard travels in the bundle, byte for byte
        const page = await fetch(`${server.baseUrl}/supervision`);
        assert.equal(page.status, 200);
        assert.match(await page.text(), /<script type="module" src="\/supervision\/app.js">/);
        for (const [name, { text }] of Object.entries(SUPERVISION_FILES)) {
          const file = await fetch(`${server.baseUrl}/supervision/${name}`);
          assert.equal(file.status, 200, name);
          assert.equal(await file.text(), text, name);
        }
      } finally {
        await server.stop();
      }
    });
  });

  await t.step("without the unstable flags: one line saying which, no stack trace", async () => {
    const bare = await runServerToExit({ SVC_KV: ":memory:" }, {
      args: ["run", "--quiet", "-A", "--no-config", "dist/svc.js"],
    });
    assert.equal(bare.code, 1, bare.stderr);
    assert.equal(
      bare.stderr,
      "svc: Deno KV and Deno.cron are off: run with --unstable-kv --unstable-cron, " +
        "e.g. deno run -A --unstable-kv --unstable-cron dist/svc.js\n",
    );
  });
});
