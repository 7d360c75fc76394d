/**
 * The Asterisk adapter under test: the real app with `SVC_PLATFORM=asterisk` pointed at an AMI
 * server on loopback (a replay of recorded sessions, or nothing at all), the scenario table's
 * people built through `/1.1`, and a temporary configuration directory.
 */
import type { AsteriskPlatform } from "../../../../lib/platform/asterisk/mod.ts";
import { setup, type TestContext } from "../../../helpers.ts";
import { scenarioWorld } from "../fixtures.ts";
import type { World } from "../scenarios.ts";

export interface AsteriskContext {
  ctx: TestContext;
  w: World;
  platform: AsteriskPlatform;
  /** `SVC_ASTERISK_CONFIG_DIR`. */
  configDir: string;
  /** Closes the platform and the store, removes the directory. */
  close(): Promise<void>;
}

/** The app on AMI port `port` (nothing is started: call `platform.start()`). */
export async function asteriskContext(
  port: number,
  env: Record<string, string> = {},
): Promise<AsteriskContext> {
  const configDir = await Deno.makeTempDir({ prefix: "svc-asterisk-" });
  const ctx = await setup({
    SVC_PLATFORM: "asterisk",
    SVC_AMI_PORT: String(port),
    SVC_AMI_USERNAME: "admin",
    SVC_AMI_SECRET: "admin",
    SVC_ASTERISK_CONFIG_DIR: configDir,
    ...env,
  });
  const w = await scenarioWorld(ctx);
  const platform = ctx.services.platform as AsteriskPlatform;
  return {
    ctx,
    w,
    platform,
    configDir,
    async close() {
      await platform.close();
      ctx.services.store.close();
      await Deno.remove(configDir, { recursive: true });
    },
  };
}
