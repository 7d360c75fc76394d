/**
 * The start shared by the live tests that record their AMI session: a throw-away PBX
 * (`tests/peers/asterisk_pbx.ts`) behind a recording proxy (`tests/peers/ami_recorder.ts`), booted
 * with the files svc writes, and its baresip phones registered. svc's first connection only writes
 * those files; the test's own svc connects next, which is the session the recorder keeps.
 */
import type { AsteriskPlatform } from "../../lib/platform/asterisk/mod.ts";
import { type AmiRecorder, startAmiRecorder } from "../peers/ami_recorder.ts";
import { type Pbx, type PbxOptions, preparePbx } from "../peers/asterisk_pbx.ts";
import { type Phone, type PhoneOptions, startPhone } from "../peers/baresip_phone.ts";
import { setup, type TestContext } from "../helpers.ts";
import { until } from "./svc_http.ts";

export interface RecordedPbx {
  pbx: Pbx;
  recorder: AmiRecorder;
  /** The phones, by the names `phones` gave them. */
  phones: Record<string, Phone>;
  /** Hangs up and stops the phones, then the recorder and Asterisk. */
  stop(): Promise<void>;
}

export interface RecordedPbxOptions {
  prefix: string;
  config?: PbxOptions["config"];
  /** svc on the Asterisk adapter through `amiPort`, its people built. */
  svc(amiPort: number, pbx: Pbx): Promise<{ platform: AsteriskPlatform; close(): Promise<void> }>;
  /** The file of svc's config dir Asterisk needs before it starts (e.g. `queues_svc.conf`). */
  file: string;
  /** A name → how that phone is started (its SIP user's password is `<user>-sip`). */
  phones: Record<string, Omit<PhoneOptions, "pbx" | "password">>;
  /** How long the phones may take to register. */
  registerMs: number;
}

export async function startRecordedPbx(options: RecordedPbxOptions): Promise<RecordedPbx> {
  const pbx = await preparePbx({ prefix: options.prefix, config: options.config });
  const recorder = startAmiRecorder(pbx.amiPort);
  const phones: Record<string, Phone> = {};
  const stop = async () => {
    for (const phone of Object.values(phones)) await phone.ctrl.hangup().catch(() => {});
    for (const phone of Object.values(phones)) await phone.stop();
    await recorder.close();
    await pbx.stop();
  };
  try {
    // svc writes its files first (its users, dialplan and queues), then Asterisk boots with them
    const first = await options.svc(recorder.port, pbx);
    first.platform.start();
    await until(
      () => Deno.readTextFile(`${pbx.configDir}/${options.file}`).then(() => true, () => false),
      10_000,
      "svc's files",
    );
    await pbx.start();
    await first.platform.firstSync();
    for (const [name, phone] of Object.entries(options.phones)) {
      phones[name] = await startPhone({ pbx, password: `${phone.user}-sip`, ...phone });
    }
    const users = Object.values(options.phones).map((phone) => phone.user);
    await until(() => pbx.registered(users), options.registerMs, "the phones register");
    await first.close();
  } catch (error) {
    await stop();
    throw error;
  }
  return { pbx, recorder, phones, stop };
}

/** svc in this process on the Asterisk adapter, its people built by `build`. */
export interface SvcOnPbx<W, P = AsteriskPlatform> {
  ctx: TestContext;
  w: W;
  platform: P;
  /** Closes the platform and the store. */
  close(): Promise<void>;
}

/** svc in this process with the settings `env`, its people built by `build`. */
export async function svcWith<W, P extends { close(): Promise<void> }>(
  env: Record<string, string>,
  build: (ctx: TestContext) => Promise<W>,
): Promise<SvcOnPbx<W, P>> {
  const ctx = await setup(env);
  const w = await build(ctx);
  const platform = ctx.services.platform as unknown as P;
  return {
    ctx,
    w,
    platform,
    async close() {
      await platform.close();
      ctx.services.store.close();
    },
  };
}

/** svc in this process on `pbx` through `amiPort` (the recorder's), `env` added to its settings. */
export function svcOnPbx<W>(
  amiPort: number,
  pbx: Pbx,
  build: (ctx: TestContext) => Promise<W>,
  env: Record<string, string> = {},
): Promise<SvcOnPbx<W>> {
  return svcWith({
    SVC_PLATFORM: "asterisk",
    SVC_AMI_PORT: String(amiPort),
    SVC_AMI_USERNAME: pbx.ami.username,
    SVC_AMI_SECRET: pbx.ami.secret,
    SVC_ASTERISK_CONFIG_DIR: pbx.configDir,
    ...env,
  }, build);
}
