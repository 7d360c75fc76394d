/**
 * Two throw-away PBXs behind one svc (`SVC_ASTERISK_SERVERS`, docs/asterisk.md "Several
 * servers"), each behind its own recording proxy: `main` (alice's and carol's phones, the queue,
 * the rooms) and `mds1` (bob's phone), as `recorded_pbx.ts` starts one. svc's first connection
 * writes both servers' files, then both PBXs boot with them; the test's own svc connects next,
 * which is the session each recorder keeps.
 */
import type { AsteriskServers } from "../../lib/platform/asterisk/several.ts";
import { type AmiRecorder, startAmiRecorder } from "../peers/ami_recorder.ts";
import { type Pbx, type PbxOptions, preparePbx } from "../peers/asterisk_pbx.ts";
import { type Phone, type PhoneOptions, startPhone } from "../peers/baresip_phone.ts";
import { scenarioWorld } from "../lib/platform/fixtures.ts";
import type { World } from "../lib/platform/scenarios.ts";
import { placeBob, type ServerName, SERVERS } from "../lib/platform/asterisk/across.ts";
import { until } from "./svc_http.ts";
import { type SvcOnPbx, svcWith } from "./recorded_pbx.ts";

/** Whose phone registers on which server. */
export const PLACED: Record<string, ServerName> = { alice: "main", bob: "mds1", carol: "main" };

export interface RecordedServers {
  pbx: Record<ServerName, Pbx>;
  recorder: Record<ServerName, AmiRecorder>;
  /** The servers file svc reads (its AMI ports are the recorders'). */
  file: string;
  phones: Record<string, Phone>;
  stop(): Promise<void>;
}

export interface RecordedServersOptions {
  prefix: string;
  /** Each server's configuration changes (`PbxOptions.config`). */
  config?: Partial<Record<ServerName, PbxOptions["config"]>>;
  /** A name → how that phone is started; it registers on the server {@link PLACED} says. */
  phones: Record<string, Omit<PhoneOptions, "pbx" | "password">>;
  registerMs: number;
}

/** The servers file naming `pbx` through `ports` (the recorders', or the PBXs' own). */
export function serversFile(pbx: Record<ServerName, Pbx>, ports: Record<ServerName, number>) {
  return JSON.stringify(SERVERS.map((name) => ({
    name,
    amiHost: "127.0.0.1",
    amiPort: ports[name],
    amiUser: pbx[name].ami.username,
    amiSecret: pbx[name].ami.secret,
    configDir: pbx[name].configDir,
    sipHost: "127.0.0.1",
    sipPort: pbx[name].sipPort,
  })));
}

export async function startRecordedServers(
  options: RecordedServersOptions,
): Promise<RecordedServers> {
  const pbx = {} as Record<ServerName, Pbx>;
  const recorder = {} as Record<ServerName, AmiRecorder>;
  const phones: Record<string, Phone> = {};
  const file = await Deno.makeTempFile({ prefix: "svc-servers-", suffix: ".json" });
  const stop = async () => {
    for (const phone of Object.values(phones)) await phone.ctrl.hangup().catch(() => {});
    for (const phone of Object.values(phones)) await phone.stop();
    for (const name of SERVERS) {
      await recorder[name]?.close();
      await pbx[name]?.stop();
    }
    await Deno.remove(file).catch(() => {});
  };
  try {
    for (const name of SERVERS) {
      pbx[name] = await preparePbx({
        prefix: options.prefix,
        config: {
          // each server's call ids its own (Asterisk prefixes its Uniqueids with it)
          "asterisk.conf": (ours) => `${ours}systemname = ${name}\n`,
          ...options.config?.[name],
        },
      });
      recorder[name] = startAmiRecorder(pbx[name].amiPort);
    }
    const ports = Object.fromEntries(SERVERS.map((name) => [name, recorder[name].port]));
    await Deno.writeTextFile(file, serversFile(pbx, ports as Record<ServerName, number>));
    const first = await svcOnServers(file);
    first.platform.start();
    for (const name of SERVERS) {
      await until(
        () =>
          Deno.readTextFile(`${pbx[name].configDir}/pjsip_svc.conf`).then(() => true, () => false),
        10_000,
        `svc's files of ${name}`,
      );
    }
    await Promise.all(SERVERS.map((name) => pbx[name].start()));
    await first.platform.firstSync();
    for (const [name, phone] of Object.entries(options.phones)) {
      const server = pbx[PLACED[phone.user] ?? "main"];
      phones[name] = await startPhone({ pbx: server, password: `${phone.user}-sip`, ...phone });
    }
    for (const name of SERVERS) {
      const users = Object.values(options.phones).map((phone) => phone.user)
        .filter((user) => (PLACED[user] ?? "main") === name);
      await until(() => pbx[name].registered(users), options.registerMs, `phones on ${name}`);
    }
    await first.close();
  } catch (error) {
    await stop();
    throw error;
  }
  return { pbx, recorder, file, phones, stop };
}

/** svc in this process on the servers of `file`, the scenario table's people, bob on `mds1`. */
export function svcOnServers(
  file: string,
  env: Record<string, string> = {},
): Promise<SvcOnPbx<World, AsteriskServers>> {
  return svcWith<World, AsteriskServers>(
    { SVC_PLATFORM: "asterisk", SVC_ASTERISK_SERVERS: file, ...env },
    async (ctx) => {
      const w = await scenarioWorld(ctx);
      await placeBob(w);
      return w;
    },
  );
}
