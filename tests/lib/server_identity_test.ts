/**
 * The server's uuid (`origin_uuid` of the agent daemon's statuses): generated once, kept in the
 * store, the same for every process on one store (even when several ask first at once) and after
 * a restart; another store, another uuid.
 */
import assert from "node:assert/strict";
import { serverUuid } from "../../lib/store/server_identity.ts";
import { Store } from "../../lib/store/store.ts";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * A process that opens the store at `path`, asks for the uuid and prints it. SQLite may refuse a
 * write racing another process's ("database is locked": `StoreUnavailable`, a 503 for a request):
 * nothing was written then, and asking again answers.
 */
function askingProcess(path: string) {
  const script = `
    import { serverUuid } from "${new URL("../../lib/store/server_identity.ts", import.meta.url)}";
    import { Store } from "${new URL("../../lib/store/store.ts", import.meta.url)}";
    const store = await Store.open(${JSON.stringify(path)});
    for (let attempt = 1; ; attempt++) {
      try {
        console.log(await serverUuid(store));
        break;
      } catch (error) {
        if (attempt === 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
    store.close();`;
  return new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", "--unstable-kv", script],
    stdout: "piped",
    stderr: "inherit",
  }).output();
}

Deno.test("several processes asking first at once agree; a restart reads it back", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-identity-" });
  const path = `${dir}/svc.kv`;
  try {
    (await Store.open(path)).close(); // the file exists, as with a deployment's second process
    const outputs = await Promise.all(Array.from({ length: 4 }, () => askingProcess(path)));
    const uuids = outputs.map((output) => new TextDecoder().decode(output.stdout).trim());
    assert.ok(outputs.every((output) => output.success));
    assert.equal(new Set(uuids).size, 1, uuids.join(" "));
    assert.match(uuids[0]!, UUID_V4);
    const store = await Store.open(path);
    try {
      assert.equal(await serverUuid(store), uuids[0]);
      assert.equal(await serverUuid(store), uuids[0]);
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("another store, another uuid", async () => {
  const [a, b] = [await Store.open(":memory:"), await Store.open(":memory:")];
  try {
    const [first, second] = [await serverUuid(a), await serverUuid(b)];
    assert.match(first, UUID_V4);
    assert.notEqual(first, second);
  } finally {
    a.close();
    b.close();
  }
});
