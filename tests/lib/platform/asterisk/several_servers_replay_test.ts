/**
 * The scenarios of `across.ts` on two Asterisk servers behind one svc, against the replays of
 * both servers' real sessions, recorded by `tests/e2e/asterisk_live_servers_test.ts`: each user's
 * events, the calls across servers sharing one `linkedId`, and the history are the scenario
 * table's (`checkAcross`), as on one server.
 *
 * bob's server (`mds1`) names main's calls (`SvcLink`): each of its recorded lines naming one is
 * played once svc dialled that call on main in this run (and is given svc's id for it).
 */
import assert from "node:assert/strict";
import type { CallStarted, PlatformEvent } from "../../../../lib/platform/port.ts";
import type { AsteriskServers } from "../../../../lib/platform/asterisk/several.ts";
import {
  type AmiReplay,
  type RecordLine,
  startAmiReplay,
  SVC_DRIVEN,
  TRANSCRIPTS,
} from "../../../peers/ami_replay.ts";
import { setup } from "../../../helpers.ts";
import { scenarioWorld } from "../fixtures.ts";
import { capture, checkAcross } from "../scenario_runner.ts";
import { SCENARIOS } from "../scenarios.ts";
import { acrossTranscript, placeBob, REPLAYED, type ServerName, SERVERS } from "./across.ts";

for (const transcript of REPLAYED) {
  const scenario = SCENARIOS.find((one) => one.transcript === transcript)!;
  Deno.test(`two Asterisk servers (replay of ${transcript}): ${scenario.name}`, async () => {
    const replays = {} as Record<ServerName, AmiReplay>;
    const mainIds = await originated(acrossTranscript(transcript, "main"));
    /** main's recorded call `id` was dialled in this run: svc gave it its id. */
    const dialled = (id: string) =>
      replays.main.uniqueIds().some(([pattern]) => new RegExp(pattern.source).test(id));
    for (const name of SERVERS) {
      replays[name] = await startAmiReplay({
        connections: [acrossTranscript(transcript, name)],
        auto: (action) => !SVC_DRIVEN.has((action.get("Action") ?? "").toLowerCase()),
        // mds1 names main's calls (`SvcLink`) as svc named them, once svc dialled them
        ...(name === "mds1" && {
          alsoMap: () => replays.main.uniqueIds(),
          gate: (record: RecordLine) =>
            mainIds.every(({ id, t }) =>
              (record.t < t || dialled(id)) && (!record.data.includes(id) || dialled(id))
            ),
        }),
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
      await bothWaiting();
      const started: CallStarted[] = [];
      for (const step of scenario.steps) {
        const result = await step.command(w);
        if (typeof result === "object" && result !== null && "linkedId" in result) {
          started.push(result as CallStarted);
        }
        await bothWaiting();
        await platform.settled();
      }
      // mds1's part of the last call, played once main's came
      while ((await bothWaiting()).includes("gated")) await platform.settled();
      // what is left of each recording is svc's own close
      const left = await bothWaiting();
      assert.ok(left.every((next) => next === "Logoff" || next === "end"), `left: ${left}`);
      await platform.settled();
      checkAcross(scenario, { events, started, w });
      assert.deepEqual(platform.calls(), [], "no call left");
    } finally {
      await platform.close();
      ctx.services.store.close();
      for (const name of SERVERS) await replays[name].close();
      await Deno.remove(root, { recursive: true });
    }
  });
}

/**
 * The ids svc gave the channels it originated in a recorded session (`ChannelId`s), each with the
 * recorded time of its `Originate`.
 */
async function originated(name: string): Promise<{ id: string; t: number }[]> {
  const lines = (await Deno.readTextFile(new URL(`${name}.jsonl`, TRANSCRIPTS))).split("\n");
  return lines.filter(Boolean).map((line) => JSON.parse(line) as RecordLine).flatMap((record) =>
    record.dir === "send" && record.data.startsWith("Action: Originate\r\n")
      ? [...record.data.matchAll(/\r\n(?:Other)?ChannelId: ([^\r]+)\r\n/g)].map((match) => ({
        id: match[1]!,
        t: record.t,
      }))
      : []
  );
}
