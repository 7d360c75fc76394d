/**
 * The one lease of several Asterisk servers (docs/asterisk.md, "Several servers"): two svc
 * processes on one store and the same two servers (tiny AMI peers), in real time. One process
 * holds the lease for both servers (it hands over both servers' events and writes both servers'
 * files), never one server each: a process reaching both takes it from one reaching one; when the
 * holder stops, the other takes both over.
 */
import assert from "node:assert/strict";
import { prepareStore } from "../../../../lib/bootstrap.ts";
import { systemClock } from "../../../../lib/clock.ts";
import { loadConfig } from "../../../../lib/config.ts";
import { createLogger } from "../../../../lib/log.ts";
import type { AsteriskServers } from "../../../../lib/platform/asterisk/several.ts";
import { createServices } from "../../../../lib/services.ts";
import { Store } from "../../../../lib/store/store.ts";
import { tinyAsterisk } from "./tiny_asterisk.ts";

async function until(test: () => boolean | Promise<boolean>, ms: number, what: string) {
  const end = performance.now() + ms;
  while (!await test()) {
    if (performance.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A process of svc on the servers of `servers`, its store the file `kv`. */
async function svcProcess(kv: string, servers: string) {
  const store = await Store.open(kv);
  const services = await createServices(
    loadConfig({ SVC_KV: kv, SVC_PLATFORM: "asterisk", SVC_ASTERISK_SERVERS: servers }),
    { clock: systemClock, logger: createLogger("error", () => {}), store },
  );
  await prepareStore(services);
  const platform = services.platform as AsteriskServers;
  /** Which of the servers this process hands over the events of. */
  const leads = () => ["main", "b"].map((name) => platform.server(name)!.leading());
  return {
    platform,
    leads,
    async close() {
      await platform.close();
      services.supervision.close();
      await services.events.close();
      store.close();
    },
  };
}

Deno.test("several servers, two svc processes: one holds the lease of both servers", async () => {
  const peers = { main: tinyAsterisk(), b: tinyAsterisk() };
  const dir = await Deno.makeTempDir({ prefix: "svc-servers-lease-" });
  const servers = `${dir}/servers.json`;
  await Deno.writeTextFile(
    servers,
    JSON.stringify(
      Object.entries(peers).map(([name, peer], i) => ({
        name,
        amiHost: "127.0.0.1",
        amiPort: peer.port,
        amiUser: "admin",
        amiSecret: `${name}-secret`,
        configDir: `${dir}/${name}`,
        sipPort: 5060 + i,
      })),
    ),
  );
  const a = await svcProcess(`${dir}/svc.kv`, servers);
  const b = await svcProcess(`${dir}/svc.kv`, servers);
  try {
    a.platform.start();
    await a.platform.firstSync();
    await until(() => a.leads().every(Boolean), 5000, "a leads both servers");
    b.platform.start();
    await b.platform.firstSync();
    // a few ticks: b never takes one server's part
    for (let i = 0; i < 15; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.deepEqual(a.leads(), [true, true], "a leads both");
      assert.deepEqual(b.leads(), [false, false], "b leads none");
    }
    await a.close();
    await until(() => b.leads().every(Boolean), 5000, "b takes both over");
  } finally {
    await a.close().catch(() => {});
    await b.close();
    await Promise.all(Object.values(peers).map((peer) => peer.close()));
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("several servers: a process reaching both servers takes the lease from one reaching one", async () => {
  const peers = { main: tinyAsterisk(), b: tinyAsterisk() };
  const dir = await Deno.makeTempDir({ prefix: "svc-servers-lease-" });
  const file = (name: string, bPort: number) => {
    const path = `${dir}/${name}.json`;
    Deno.writeTextFileSync(
      path,
      JSON.stringify([["main", peers.main.port], ["b", bPort]].map(([server, port], i) => ({
        name: server,
        amiHost: "127.0.0.1",
        amiPort: port,
        amiUser: "admin",
        amiSecret: `${server}-secret`,
        configDir: `${dir}/${name}-${server}`,
        sipPort: 5060 + i,
      }))),
    );
    return path;
  };
  // a's b is a port nobody listens on: a reaches main only
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const nowhere = (closed.addr as Deno.NetAddr).port;
  closed.close();
  const a = await svcProcess(`${dir}/svc.kv`, file("a", nowhere));
  const b = await svcProcess(`${dir}/svc.kv`, file("b", peers.b.port));
  try {
    a.platform.start();
    await until(() => a.leads().every(Boolean), 5000, "a leads, alone");
    b.platform.start();
    await b.platform.firstSync();
    await until(() => b.leads().every(Boolean), 5000, "b, reaching both, takes both");
    await until(() => !a.leads().some(Boolean), 5000, "a leads none");
    for (let i = 0; i < 10; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.deepEqual([a.leads(), b.leads()], [[false, false], [true, true]]);
    }
  } finally {
    await a.close();
    await b.close();
    await Promise.all(Object.values(peers).map((peer) => peer.close()));
    await Deno.remove(dir, { recursive: true });
  }
});
