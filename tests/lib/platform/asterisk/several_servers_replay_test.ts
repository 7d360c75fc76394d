/**
 * The scenarios of `across.ts` on two Asterisk servers behind one svc, against the replays of
 * both servers' real sessions, recorded by `tests/e2e/asterisk_live_servers_test.ts`: each user's
 * events, the calls across servers sharing one `linkedId`, and the history are the scenario
 * table's (`checkAcross`), as on one server.
 *
 * Both servers' sessions play in their recorded order (each replay plays a line once the other
 * came to its time), as Asterisk sent them: a call crossing the trunk exists on main when mds1
 * says it arrived there; each names the other's calls as svc named them in this run.
 */
import assert from "node:assert/strict";
import type { CallStarted, PlatformEvent } from "../../../../lib/platform/port.ts";
import type { AsteriskServers } from "../../../../lib/platform/asterisk/several.ts";
import {
  type AmiReplay,
  type RecordLine,
  startAmiReplay,
  SVC_DRIVEN,
} from "../../../peers/ami_replay.ts";
import { setup } from "../../../helpers.ts";
import { scenarioWorld } from "../fixtures.ts";
import { capture, checkAcross } from "../scenario_runner.ts";
import { SCENARIOS } from "../scenarios.ts";
import {
  ACROSS,
  acrossTranscript,
  placeBob,
  type ServerName,
  SERVERS,
  undoServices,
} from "./across.ts";

for (const transcript of ACROSS) {
  const scenario = SCENARIOS.find((one) => one.transcript === transcript)!;
  Deno.test(`two Asterisk servers (replay of ${transcript}): ${scenario.name}`, async () => {
    const replays = {} as Record<ServerName, AmiReplay>;
    const other = (name: ServerName) => replays[name === "main" ? "mds1" : "main"];
    for (const name of SERVERS) {
      replays[name] = await startAmiReplay({
        connections: [acrossTranscript(transcript, name)],
        auto: (action) => !SVC_DRIVEN.has((action.get("Action") ?? "").toLowerCase()),
        // both sessions in their recorded order: a line once the other replay came to its time
        gate: (record: RecordLine) => record.t <= other(name).position(),
        // each names the other's calls (`SvcLink`) as svc named them in this run
        alsoMap: () => other(name).uniqueIds(),
      });
    }
    const root = await Deno.makeTempDir({ prefix: "svc-across-" });
    const file = `${root}/servers.json`;
    await Deno.writeTextFile(
      file,
      JSON.stringify(SERVERS.map((name, i) => ({
        name,
        amiHost: "127.0.0.1",
        amiPort: replays[name].port,
        amiUser: "svc",
        amiSecret: `${name}-secret`,
        configDir: `${root}/${name}`,
        sipPort: 5060 + i,
      }))),
    );
    const ctx = await setup({ SVC_PLATFORM: "asterisk", SVC_ASTERISK_SERVERS: file });
    const platform = ctx.services.platform as AsteriskServers;
    try {
      const w = await scenarioWorld(ctx);
      await placeBob(w);
      await scenario.prepare?.(w);
      const events: PlatformEvent[] = capture(ctx);
      platform.start();
      await platform.firstSync();
      const bothWaiting = () => Promise.all(SERVERS.map((name) => replays[name].waiting()));
      /**
       * Both replays played what they can: each waits for svc's next action, is over, or waits for
       * the other to come to its time while the other waits for svc.
       */
      const played = async () => {
        for (let i = 0; i < 1000; i++) {
          const states = await bothWaiting();
          await platform.settled();
          const blocked = (name: ServerName, i: number) =>
            states[i] !== "gated" || replays[name].position() > other(name).position();
          if (SERVERS.every(blocked)) return;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      };
      await played();
      const started: CallStarted[] = [];
      for (const step of scenario.steps) {
        const result = await step.command(w);
        if (typeof result === "object" && result !== null && "linkedId" in result) {
          started.push(result as CallStarted);
        }
        await played();
      }
      // the end of the call as recorded: what is left is the undoing's writes and svc's close
      const left = async (also: RegExp) =>
        (await bothWaiting()).every((next) => /^(Logoff|end|gated)$/.test(next) || also.test(next));
      const until = async (also: RegExp) => {
        await played();
        for (let i = 0; i < 200 && !await left(also); i++) await played();
        assert.ok(await left(also), `left: ${await bothWaiting()}`);
      };
      await until(/^DB(Put|Del)$/);
      checkAcross(scenario, { events, started, w });
      await undoServices(w, transcript);
      await until(/^$/);
      assert.deepEqual(platform.calls(), [], "no call left");
    } finally {
      await platform.close();
      ctx.services.store.close();
      for (const name of SERVERS) await replays[name].close();
      await Deno.remove(root, { recursive: true });
    }
  });
}
