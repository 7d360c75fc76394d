/**
 * DND and forwards on Asterisk: the user record is the source of truth; the generated dialplan
 * (`svc-user` in extensions_svc.conf) reads them from the AstDB family `svc`, one key per service
 * and user id: `dnd/<id>` = `1`, `fwd_unc/<id>`, `fwd_busy/<id>`, `fwd_rna/<id>` = the sanitized
 * destination. A disabled service has no key.
 */
import { sanitizeNumber } from "../../phone_numbers.ts";
import type { UserRecord } from "../../store/users.ts";
import type { AmiResponse } from "./ami_client.ts";

export const ASTDB_FAMILY = "svc";

const FORWARD_KEYS = { unconditional: "fwd_unc", busy: "fwd_busy", noanswer: "fwd_rna" } as const;

/** Every AstDB key of `user`, with its value, or null where the service is off. */
export function userKeys(user: UserRecord): Map<string, string | null> {
  const keys = new Map<string, string | null>();
  keys.set(`dnd/${user.id}`, user.services.dnd.enabled ? "1" : null);
  for (const [kind, key] of Object.entries(FORWARD_KEYS)) {
    const forward = user.forwards[kind as keyof typeof FORWARD_KEYS];
    const destination = forward.enabled ? sanitizeNumber(forward.destination ?? "") : "";
    keys.set(`${key}/${user.id}`, destination || null);
  }
  return keys;
}

type Action = (action: string, fields: Record<string, string>) => Promise<AmiResponse>;

/** Writes `keys` (a null value deletes; deleting a missing key is fine). */
export async function writeKeys(action: Action, keys: Map<string, string | null>): Promise<void> {
  for (const [key, value] of keys) {
    if (value === null) await action("DBDel", { Family: ASTDB_FAMILY, Key: key });
    else await action("DBPut", { Family: ASTDB_FAMILY, Key: key, Val: value });
  }
}

/**
 * What to write so that the family holds exactly the users' services: `tree` is what `DBGetTree`
 * listed (keys as `/svc/dnd/7`); keys of users svc does not know are left alone.
 */
export function keysToWrite(
  tree: { key: string; value: string }[],
  users: UserRecord[],
): Map<string, string | null> {
  const current = new Map<string, string>();
  const prefix = `/${ASTDB_FAMILY}/`;
  for (const { key, value } of tree) {
    if (key.startsWith(prefix)) current.set(key.slice(prefix.length), value);
  }
  const writes = new Map<string, string | null>();
  for (const user of users) {
    for (const [key, value] of userKeys(user)) {
      if ((current.get(key) ?? null) !== value) writes.set(key, value);
    }
  }
  return writes;
}
