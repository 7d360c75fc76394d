/**
 * `deno task restore FILE [--force]`: loads the backup FILE into the store `SVC_KV` (a file, created
 * if need be, or a KV Connect URL), which must be empty unless `--force` (everything in it is then
 * deleted first). Stop every server on that store before. Prints one JSON line: the backup's time
 * and versionstamp, the entries written, those expired since, those cleared. See
 * `lib/store/backup.ts` and deploy/README.md "Backup and restore".
 */
import { restoreStore } from "../lib/store/backup.ts";
import { runTool, toolArguments } from "./store_tool.ts";

const { file, force, location } = toolArguments("restore", Deno.args);
await runTool("restore", () => restoreStore(file, location, { force }));
