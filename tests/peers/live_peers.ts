/**
 * Asterisk and baresip for the live tests (`tests/e2e/asterisk_live*_test.ts`): where they are
 * installed, or, when one is missing, the one-line notice the test prints as it is skipped (CI has
 * neither).
 */
import { findAsterisk } from "./asterisk_pbx.ts";
import { type Baresip, findBaresip } from "./baresip_phone.ts";

export interface LivePeers {
  /** Asterisk's prefix (`SVC_TEST_ASTERISK`, the `asterisk` on PATH, or /opt/asterisk). */
  prefix: string | null;
  baresip: Baresip | null;
  /** True when one is missing: the test is to be skipped (its notice was printed). */
  missing: boolean;
}

/** Finds the peers of the live test `test`, printing its skip notice when one is missing. */
export function livePeers(test: string): LivePeers {
  const prefix = findAsterisk();
  const baresip = findBaresip();
  const missing = [
    ...(prefix === null ? ["no Asterisk (set SVC_TEST_ASTERISK to its prefix)"] : []),
    ...(baresip === null ? ["no baresip on PATH (apt-get install baresip-core)"] : []),
  ];
  if (missing.length > 0) console.log(`${test}: ${missing.join(", ")}: skipped`);
  return { prefix, baresip, missing: missing.length > 0 };
}
