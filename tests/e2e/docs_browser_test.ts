/**
 * The docs page in a real browser (docs/openapi.md): the real server process, and headless
 * Chromium (Debian's `chromium`) driven over the DevTools protocol opening `/docs`. Swagger UI must
 * render from what svc serves alone (every request the page makes stays on svc's origin: no CDN,
 * no validator), show every area's tag and a sample of routes, and run one "Try it out" call
 * (`GET /health`) whose answer it displays. A screenshot is saved in the test's temp folder.
 *
 * Chromium is installed when missing and the test runs as root (tests/peers/debian.ts), unless
 * `SVC_TEST_NO_INSTALL=1`, which skips the test with a notice.
 */
import assert from "node:assert/strict";
import { ensureDebianPackages, skipWithoutPackages } from "../peers/debian.ts";
import { AREAS } from "../../routes/openapi_document.ts";
import { CHROMIUM_WHY, type DevTools, withChromium } from "./chromium.ts";
import { startServer, withTempDir } from "./server.ts";

const noChromium = await skipWithoutPackages(["chromium"], CHROMIUM_WHY);

/** Routes of every area the page must list (as Swagger UI writes their paths). */
const SAMPLE = [
  ["get", "/health"],
  ["post", "/svc/api/2.0/auth/login"],
  ["post", "/svc/api/2.0/dnd/{username}"],
  ["post", "/svc/api/1.0/dial/{domain}/{username}/"],
  ["get", "/1.1/users/{id}"],
  ["get", "/agents/by-number/{number}"],
  ["get", "/users/me/agents"],
  ["post", "/0.1/token"],
];

/** What the page shows, read in the page once Swagger UI has rendered. */
interface Shown {
  tags: string[];
  operations: string[];
  tryIt: { status: string; body: string } | { failed: string };
}

/**
 * The page-side script: waits for Swagger UI, reads the tags and operations shown, then opens
 * `GET /health`, presses "Try it out" and "Execute" and reads the answer displayed.
 */
const READ_PAGE = `(async () => {
  const wait = async (find, what) => {
    for (let i = 0; i < 300; i++) {
      const found = find();
      if (found) return found;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error("the page never showed " + what);
  };
  // Swagger UI renders the operations as they scroll into view: scroll to the end, reading
  await wait(() => document.querySelector(".opblock"), "the first operation");
  const tags = new Set();
  const operations = new Set();
  const read = () => {
    for (const tag of document.querySelectorAll(".opblock-tag")) tags.add(tag.dataset.tag);
    for (const block of document.querySelectorAll(".opblock")) {
      operations.add(
        block.querySelector(".opblock-summary-method").textContent.toLowerCase() + " " +
          block.querySelector(".opblock-summary-path").dataset.path,
      );
    }
  };
  for (let still = 0; still < 100;) {
    read();
    const before = window.scrollY;
    window.scrollBy(0, window.innerHeight / 2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    still = window.scrollY === before ? still + 1 : 0;
  }
  read();
  window.scrollTo(0, 0);
  let tryIt;
  try {
    const block = await wait(
      () =>
        [...document.querySelectorAll(".opblock-get")].find((b) =>
          b.querySelector(".opblock-summary-path").dataset.path === "/health"
        ),
      "GET /health",
    );
    block.querySelector(".opblock-summary-control").click();
    (await wait(() => block.querySelector(".try-out__btn"), "Try it out")).click();
    (await wait(() => block.querySelector(".execute"), "Execute")).click();
    const status = await wait(
      () => block.querySelector(".live-responses-table .response .response-col_status"),
      "the answer",
    );
    const body = await wait(
      () => block.querySelector(".live-responses-table .response-col_description pre")?.textContent,
      "the answer's body",
    );
    tryIt = { status: status.textContent.trim(), body };
  } catch (error) {
    tryIt = { failed: String(error) };
  }
  return { tags: [...tags], operations: [...operations], tryIt };
})()`;

async function readDocsPage(devtools: DevTools, url: string, screenshot: string) {
  const { targetId } = await devtools.send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await devtools.send("Target.attachToTarget", { targetId, flatten: true });
  const requested: string[] = [];
  devtools.onEvent("Network.requestWillBeSent", (params) => requested.push(params.request.url));
  await devtools.send("Network.enable", {}, sessionId);
  await devtools.send("Runtime.enable", {}, sessionId);
  await devtools.send("Page.enable", {}, sessionId);
  await devtools.send("Emulation.setDeviceMetricsOverride", {
    width: 1280,
    height: 1600,
    deviceScaleFactor: 1,
    mobile: false,
  }, sessionId);
  await devtools.send("Page.navigate", { url }, sessionId);
  const answer = await devtools.send("Runtime.evaluate", {
    expression: READ_PAGE,
    awaitPromise: true,
    returnByValue: true,
    timeout: 40_000,
  }, sessionId);
  if (answer.exceptionDetails) {
    throw new Error(
      `the page failed: ${JSON.stringify(answer.exceptionDetails)}\n${devtools.pageLog.join("\n")}`,
    );
  }
  const { data } = await devtools.send("Page.captureScreenshot", { format: "png" }, sessionId);
  await Deno.writeFile(screenshot, Uint8Array.from(atob(data), (char) => char.charCodeAt(0)));
  return { shown: answer.result.value as Shown, requested };
}

Deno.test({
  name: "the docs page shows every area in Chromium, offline, and tries GET /health",
  ignore: noChromium,
  async fn() {
    await ensureDebianPackages(["chromium"], CHROMIUM_WHY);
    await withTempDir(async (dir) => {
      const server = await startServer({ SVC_KV: `${dir}/svc.kv` });
      try {
        const screenshot = `${dir}/docs.png`;
        const { shown, requested } = await withChromium((devtools) =>
          readDocsPage(devtools, `${server.baseUrl}/docs`, screenshot)
        );
        const seen = `tags ${shown.tags.join(", ")}; ${shown.operations.length} operations`;
        for (const area of AREAS) assert.ok(shown.tags.includes(area.tag), `${area.tag}: ${seen}`);
        for (const [method, path] of SAMPLE) {
          assert.ok(shown.operations.includes(`${method} ${path}`), `${method} ${path} not shown`);
        }
        const tried = shown.tryIt;
        assert.ok("status" in tried, `try it out failed: ${JSON.stringify(tried)}`);
        assert.equal(tried.status, "200");
        assert.deepEqual(JSON.parse(tried.body), { status: "ok" });
        // nothing but svc: the page, its files, the document, the call tried
        const elsewhere = requested.filter((url) =>
          !url.startsWith(`${server.baseUrl}/`) && !url.startsWith("data:")
        );
        assert.deepEqual(elsewhere, [], "requests left svc's origin");
        for (const path of ["/docs", "/docs/swagger-ui-bundle.js", "/svc/api/2.0/openapi.json"]) {
          assert.ok(requested.includes(`${server.baseUrl}${path}`), `${path} not requested`);
        }
        assert.ok(requested.includes(`${server.baseUrl}/health`), "the try-it call was not sent");
        const png = await Deno.readFile(screenshot);
        assert.deepEqual([...png.slice(1, 4)], [0x50, 0x4e, 0x47]); // "PNG"
        assert.ok(png.length > 10_000, `a screenshot of ${png.length} bytes`);
        const keep = Deno.env.get("SVC_TEST_SCREENSHOT");
        if (keep) await Deno.copyFile(screenshot, keep); // to look at it
      } finally {
        await server.stop();
      }
    });
  },
});
