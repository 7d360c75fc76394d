/**
 * `deno task backup FILE [--force]`: writes a consistent snapshot of the whole store (`SVC_KV`, a
 * local file) to FILE while the servers keep running, and prints one JSON line: the file, the
 * snapshot's time and versionstamp, its entry count and size. An existing FILE is refused unless
 * `--force`. See `lib/store/backup.ts` and deploy/README.md "Backup and restore".
 */
import { backupStore } from "../lib/store/backup.ts";
import { runTool, toolArguments } from "./store_tool.ts";

const { file, force, location } = toolArguments("backup", Deno.args);
await runTool("backup", () => backupStore(location, file, { force }));
