/**
 * The OpenAPI document (docs/openapi.md): `docs/openapi.json` is what the code generates, a real
 * validator accepts it, every route of the app's route table is in it with its guard's ACL, every
 * schema in it compiles, and the app serves it (JSON, and YAML per daemon) and the docs page.
 */
import assert from "node:assert/strict";
import { acceptsGzip, docsPageRoutes, GZIP_MARK } from "../../routes/docs_page.ts";
import SwaggerParser from "@apidevtools/swagger-parser";
import { Ajv2020 } from "ajv/dist/2020.js";
import { parse as parseYaml } from "yaml";
import { declaredHandler, openApiPath } from "../../lib/openapi/generate.ts";
import { isMiddlewareEntry } from "../../lib/no_route.ts";
import { guardOf } from "../../lib/openapi/operation.ts";
import { appDocument } from "../../routes/openapi_document.ts";
import { openApiFile } from "../../routes/openapi_file.ts";
import { expectError, setup } from "../helpers.ts";

const COMMITTED = new URL("../../docs/openapi.json", import.meta.url);

// deno-lint-ignore no-explicit-any
type Json = any;

Deno.test("docs/openapi.json is what the code generates (run `deno task openapi`)", async () => {
  const committed = await Deno.readTextFile(COMMITTED);
  assert.ok(committed === await openApiFile(), "docs/openapi.json is stale: deno task openapi");
});

Deno.test("the document is valid OpenAPI 3.1 (swagger-parser)", async () => {
  const document = JSON.parse(await Deno.readTextFile(COMMITTED));
  const api = await SwaggerParser.validate(structuredClone(document)) as Json;
  assert.equal(api.openapi, "3.1.0");
  // and a document with a fault is refused: the validator does check
  const broken = structuredClone(document);
  delete broken.paths["/health"].get.responses["200"].description;
  await assert.rejects(() => SwaggerParser.validate(broken), /description/);
});

Deno.test("every schema of the document compiles as JSON Schema 2020-12", async () => {
  const document = JSON.parse(await Deno.readTextFile(COMMITTED));
  const ajv = new Ajv2020({ strict: false });
  ajv.addSchema(document, "openapi");
  let count = 0;
  const visit = (node: Json, pointer: string) => {
    if (node === null || typeof node !== "object") return;
    for (const [key, value] of Object.entries<Json>(node)) {
      const at = `${pointer}/${
        encodeURIComponent(key.replaceAll("~", "~0").replaceAll("/", "~1"))
      }`;
      if (key === "schema") {
        ajv.compile({ $ref: `openapi#${at}` });
        count++;
      } else visit(value, at);
    }
  };
  visit(document.paths, "/paths");
  assert.ok(count > 200, `only ${count} schemas`);
});

Deno.test("every route of the app's route table is an operation, with its guard's ACL", async () => {
  const { app } = await setup(); // the default settings: the simulator's routes are served too
  const document = appDocument(app.routes);
  const seen = new Set<string>();
  for (const route of app.routes) {
    if (isMiddlewareEntry(route)) continue; // `use` middleware, body limits, unknown paths
    const { path } = openApiPath(route.path);
    const operation = (document.paths as Json)[path]?.[route.method.toLowerCase()];
    assert.ok(operation, `${route.method} ${route.path} is not in the document`);
    const guard = guardOf(declaredHandler(route.handler));
    if (guard?.acl) assert.equal(operation["x-acl"], guard.acl, `${route.method} ${route.path}`);
    if (guard) assert.ok(operation.security, `${route.method} ${route.path} has no security`);
    seen.add(`${route.method} ${path}`);
  }
  const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`)
  );
  assert.deepEqual(operations.sort(), [...seen].sort(), "an operation no route serves");
  // a sample of every area, each in its own tag
  const tagOf = (method: string, path: string) => (document.paths as Json)[path][method].tags[0];
  assert.equal(tagOf("get", "/health"), "Service");
  assert.equal(tagOf("post", "/svc/api/2.0/dnd/{username}"), "REST API 2.0");
  assert.equal(tagOf("post", "/svc/api/1.0/dnd/{domain}/{username}/"), "REST API 1.0 (deprecated)");
  assert.equal(tagOf("get", "/1.1/users/{id}"), "Configuration daemon (1.1)");
  assert.equal(tagOf("get", "/agents/by-id/{id}"), "Agent daemon");
  assert.equal(tagOf("get", "/users/me/agents"), "Agent daemon");
  assert.equal(tagOf("post", "/0.1/token"), "xivo-auth tokens (0.1)");
  assert.equal(
    (document.paths as Json)["/1.1/users/{id}"].get["x-acl"],
    "confd.users.{id}.read",
  );
});

Deno.test("the app serves the document, each daemon's part in YAML, and the docs page", async (t) => {
  const { app } = await setup();
  const committed = JSON.parse(await Deno.readTextFile(COMMITTED));

  await t.step("GET /svc/api/2.0/openapi.json: the whole document, no token", async () => {
    const response = await app.request("/svc/api/2.0/openapi.json");
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
    assert.deepEqual(await response.json(), committed);
  });

  const daemons: [string, string, string, string][] = [
    ["/1.1/api/api.yml", "/1.1", "/users/{id}", "Configuration daemon (1.1)"],
    ["/api/api.yml", "/", "/agents/by-number/{number}", "Agent daemon"],
    ["/0.1/api/api.yml", "/0.1", "/token/{token}", "xivo-auth tokens (0.1)"],
  ];
  for (const [path, base, sample, tag] of daemons) {
    await t.step(`GET ${path}: the daemon's paths, relative to ${base}`, async () => {
      const response = await app.request(path);
      assert.equal(response.status, 200);
      assert.match(response.headers.get("content-type") ?? "", /^application\/yaml/);
      const document = parseYaml(await response.text());
      assert.deepEqual(document.servers, [{ url: base }]);
      assert.ok(document.paths[sample], `${sample} missing`);
      assert.ok(!Object.keys(document.paths).some((p) => p.startsWith("/svc/")));
      assert.ok(document.tags.some((t: Json) => t.name === tag));
      await SwaggerParser.validate(document);
    });
  }

  await t.step("GET /docs: Swagger UI's page, its files served here", async () => {
    const page = await app.request("/docs");
    assert.equal(page.status, 200);
    const html = await page.text();
    const files = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    assert.deepEqual(files, [
      "/docs/swagger-ui.css",
      "/docs/swagger-ui-bundle.js",
      "/docs/start.js",
    ]);
    for (const file of files) {
      const response = await app.request(file);
      assert.equal(response.status, 200, file);
      assert.ok((await response.text()).length > 100, file);
    }
    const start = await (await app.request("/docs/start.js")).text();
    assert.match(start, /validatorUrl: null/); // no call to Swagger's website
    assert.match(start, /\/svc\/api\/2\.0\/openapi\.json/);
  });

  await t.step("GET /docs/{asset} of no file: 404 NotFound", async () => {
    await expectError(await app.request("/docs/nothing.js"), 404, "NotFound");
    // Names every object has are no files either (the fuzzer found `constructor` a 500).
    for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      await expectError(await app.request(`/docs/${name}`), 404, "NotFound");
    }
  });
});

Deno.test("a docs file stored gzipped (the bundle's way): its bytes to gzip clients, text to others", async () => {
  const text = "window.swagger = 1;\n".repeat(5_000);
  const gzipped = await new Response(
    new Blob([text]).stream().pipeThrough(new CompressionStream("gzip")),
  ).bytes();
  const file = { type: "text/javascript; charset=utf-8", text: GZIP_MARK + gzipped.toBase64() };
  const app = docsPageRoutes(() => Promise.resolve({ "swagger-ui-bundle.js": file }));
  const get = (acceptEncoding: string) =>
    app.request("/docs/swagger-ui-bundle.js", { headers: { "Accept-Encoding": acceptEncoding } });
  for (const accepted of ["gzip", "deflate, gzip;q=0.5", "br, *", "GZIP"]) {
    const response = await get(accepted);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-encoding"), "gzip", accepted);
    assert.equal(response.headers.get("vary"), "Accept-Encoding");
    assert.deepEqual(await response.bytes(), gzipped, accepted);
  }
  for (const refused of ["identity", "", "gzip;q=0", "*;q=0", "br, gzip;q=x"]) {
    const response = await get(refused);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-encoding"), null, refused);
    assert.equal(response.headers.get("vary"), "Accept-Encoding");
    assert.equal(await response.text(), text, refused);
  }
});

Deno.test("acceptsGzip reads Accept-Encoding by coding and weight", () => {
  const cases: [string | undefined, boolean][] = [
    [undefined, false],
    ["gzip", true],
    ["x-gzip", true],
    ["gzip;q=0.001", true],
    ["gzip; q=0", false],
    ["*", true],
    ["*, gzip;q=0", false],
    ["gzip;q=0, *", false],
    ["deflate, br", false],
    ["gzip;q=abc", false],
  ];
  for (const [header, accepted] of cases) {
    assert.equal(acceptsGzip(header), accepted, String(header));
  }
});
