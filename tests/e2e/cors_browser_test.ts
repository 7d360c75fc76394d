/**
 * End-to-end CORS in a real browser (issue 14; docs/cors.md): the real server with
 * `SVC_CORS_ORIGINS` naming one page's origin, and headless Chromium (Debian's `chromium`) loading
 * that page, whose script logs in, renews its token and lists its personal contacts across origins
 * (each call needs a preflight: a JSON body, an `Authorization` header) and writes what it got into
 * the DOM; the test reads the DOM Chromium dumps. A page on an origin not listed gets a TypeError
 * for the same calls, and for a simple GET the server did answer.
 */
import assert from "node:assert/strict";
import { ensureDebianPackages, skipWithoutPackages } from "../peers/debian.ts";
import { type RunningServer, startServer, withTempDir } from "./server.ts";
import { CHROMIUM_WHY, chromiumCommand, kill, reap, servePage } from "./chromium.ts";

const API = "/svc/api/2.0";

/** The script of both pages: calls svc at `svcUrl` and writes each result into `#result`. */
function pageScript(svcUrl: string, login: string, password: string): string {
  return `
const svc = ${JSON.stringify(svcUrl)};
const results = {};
const show = () => {
  document.getElementById("result").textContent = JSON.stringify(results);
};
async function step(name, run) {
  try {
    results[name] = await run();
  } catch (error) {
    results[name] = { failed: String(error) };
  }
  show();
}
let token = null;
await step("health", async () => {
  const response = await fetch(svc + "/health");
  return { status: response.status, body: await response.json() };
});
await step("login", async () => {
  const response = await fetch(svc + "${API}/auth/login", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ login: ${JSON.stringify(login)}, password: ${
    JSON.stringify(password)
  } }),
  });
  const body = await response.json();
  token = body.token;
  return {
    status: response.status,
    login: body.login,
    hasToken: typeof body.token === "string",
    requestId: response.headers.get("X-Request-Id"),
  };
});
await step("check", async () => {
  const response = await fetch(svc + "${API}/auth/check", {
    headers: { Authorization: "Bearer " + token },
  });
  const body = await response.json();
  return { status: response.status, login: body.login, renewed: typeof body.token === "string" };
});
await step("contacts", async () => {
  const response = await fetch(svc + "${API}/contact/personal", {
    headers: { Authorization: "Bearer " + token, Accept: "application/json" },
  });
  const body = await response.json();
  const list = document.getElementById("contacts");
  for (const entry of body.entries) {
    const item = document.createElement("li");
    item.textContent = entry.entry.slice(0, 3).join(" "); // firstname, lastname, number
    list.append(item);
  }
  return { status: response.status, count: body.entries.length };
});
await step("refused", async () => {
  const response = await fetch(svc + "${API}/contact/personal", {
    headers: { Authorization: "Bearer not-a-token" },
  });
  return { status: response.status, error: (await response.json()).error };
});
document.getElementById("done").textContent = "done";
`;
}

/** A page whose module script is `script`. */
const page = (script: string) =>
  `<!doctype html>
<html><head><meta charset="utf-8"><title>svc CORS</title></head>
<body><pre id="result">{}</pre><ul id="contacts"></ul><p id="done">running</p>
<script type="module">${script}</script></body></html>`;

/**
 * Loads `url` in headless Chromium and answers the DOM it dumps. Chromium runs in a process group
 * of its own (`setsid`) with a temporary home; afterwards, whatever happened, the group and every
 * process naming that home are killed, and the test waits until none is left.
 */
async function dumpDom(url: string): Promise<string> {
  const home = await Deno.makeTempDir({ prefix: "svc-chromium-" });
  const child = chromiumCommand(home, ["--virtual-time-budget=10000", "--dump-dom", url], "piped")
    .spawn();
  // setsid runs chromium in place (it is not a group leader here): the group is chromium's pid
  const pgid = child.pid;
  const timer = setTimeout(() => kill(-pgid), 30_000);
  try {
    const output = await child.output();
    const dom = new TextDecoder().decode(output.stdout);
    if (!dom.includes('id="done"')) {
      const stderr = new TextDecoder().decode(output.stderr);
      throw new Error(`chromium dumped no page (exit ${output.code}):\n${stderr}`);
    }
    return dom;
  } finally {
    clearTimeout(timer);
    await reap(pgid, home);
  }
}

/** Kills what is left of Chromium's processes (see {@link leftOver}), waits until none is. */
const unescape = (text: string) =>
  text.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&quot;", '"')
    .replaceAll("&amp;", "&");

/** What the page's script wrote: each step's result, the contacts listed, and whether it ended. */
function readPage(dom: string) {
  const result = /<pre id="result">([^<]*)<\/pre>/.exec(dom)?.[1];
  assert.ok(result !== undefined, dom);
  const contacts = [...dom.matchAll(/<li>([^<]*)<\/li>/g)].map((match) => unescape(match[1]!));
  return {
    // deno-lint-ignore no-explicit-any
    results: JSON.parse(unescape(result)) as Record<string, any>,
    contacts,
    done: /<p id="done">done<\/p>/.test(dom),
  };
}

/** Calls svc from the test (no Origin): JSON in and out, asserting `status`. */
async function call(
  server: RunningServer,
  method: string,
  path: string,
  body: unknown,
  status: number,
  token?: string,
) {
  const response = await fetch(server.baseUrl + path, {
    method,
    headers: {
      "Content-Type": "application/json",
      ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  assert.equal(response.status, status, `${method} ${path}: ${text}`);
  return JSON.parse(text);
}

const noChromium = await skipWithoutPackages(["chromium"], CHROMIUM_WHY);

Deno.test("a browser page on an allowed origin uses svc across origins; another cannot", {
  ignore: noChromium,
}, async () => {
  await ensureDebianPackages(["chromium"], CHROMIUM_WHY);
  let svcUrl = "";
  const script = () => pageScript(svcUrl, "carol", "carol-password");
  const allowedPage = servePage(() => page(script()));
  const otherPage = servePage(() => page(script()));
  const allowedOrigin = `http://127.0.0.1:${allowedPage.addr.port}`;
  try {
    await withTempDir(async (dir) => {
      const server = await startServer({
        SVC_KV: `${dir}/svc.kv`,
        SVC_CORS_ORIGINS: allowedOrigin,
        SVC_ADMIN_LOGIN: "admin",
        SVC_ADMIN_PASSWORD: "admin-password",
      });
      try {
        svcUrl = server.baseUrl;
        // carol, a CTI user with three personal contacts, all through the API
        const admin = await call(server, "POST", `${API}/auth/webservice`, {
          login: "admin",
          password: "admin-password",
        }, 200);
        await call(
          server,
          "POST",
          "/1.1/users",
          {
            firstname: "Carol",
            lastname: "Page",
            username: "carol",
            password: "carol-password",
          },
          201,
          admin.token,
        );
        const carol = await call(server, "POST", `${API}/auth/login`, {
          login: "carol",
          password: "carol-password",
        }, 200);
        const contacts = [
          { firstname: "Ada", lastname: "Lovelace", number: "0612345678" },
          { firstname: "Alan", lastname: "Turing", number: "0698765432" },
          { firstname: "Grace", lastname: "Hopper", number: "1002" },
        ];
        for (const contact of contacts) {
          await call(server, "POST", `${API}/contact/personal`, contact, 201, carol.token);
        }

        const allowed = readPage(await dumpDom(`${allowedOrigin}/`));
        assert.ok(allowed.done, JSON.stringify(allowed));
        const { results } = allowed;
        assert.deepEqual(results.health, { status: 200, body: { status: "ok" } });
        assert.equal(results.login.status, 200, JSON.stringify(results));
        assert.equal(results.login.login, "carol");
        assert.equal(results.login.hasToken, true);
        assert.match(results.login.requestId ?? "", /./, "X-Request-Id is exposed");
        assert.deepEqual(results.check, { status: 200, login: "carol", renewed: true });
        assert.deepEqual(results.contacts, { status: 200, count: 3 });
        assert.deepEqual(allowed.contacts, [
          "Grace Hopper 1002",
          "Ada Lovelace 0612345678",
          "Alan Turing 0698765432",
        ]);
        // an error answer is readable by the page too
        assert.deepEqual(results.refused, { status: 403, error: "InvalidToken" });

        const other = readPage(await dumpDom(`http://127.0.0.1:${otherPage.addr.port}/`));
        assert.ok(other.done, JSON.stringify(other));
        for (const name of ["health", "login", "check", "contacts", "refused"]) {
          assert.match(other.results[name]?.failed ?? "", /^TypeError: Failed to fetch/, name);
        }
        assert.deepEqual(other.contacts, []);

        // what reached the server: the allowed page's preflights were answered 204; the other
        // page's login preflight got the routes' 405 (OPTIONS is no method of theirs), and its
        // simple GET /health a 200 the
        // browser would not let the page read
        const requests = server.stderrLines.filter((line) => line.startsWith("{"))
          .map((line) => JSON.parse(line)).filter((line) => line.msg === "request");
        const seen = requests.map((r) => `${r.method} ${r.path} ${r.status}`);
        assert.ok(seen.includes(`OPTIONS ${API}/auth/login 204`), seen.join("\n"));
        assert.ok(seen.includes(`OPTIONS ${API}/auth/login 405`), seen.join("\n"));
        assert.equal(seen.filter((line) => line === "GET /health 200").length, 2);
      } finally {
        await server.stop();
      }
    });
  } finally {
    await allowedPage.shutdown();
    await otherPage.shutdown();
  }
});
