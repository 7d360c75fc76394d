/**
 * The second step of `deno task bundle`: writes the git revision of the repository into the bundle
 * (`dist/svc.js`), in place of `lib/version.ts`'s {@link REVISION_SLOT}, so that `GET /version` of a
 * bundle run anywhere tells the revision it was built from (`unknown` when built outside git). A
 * bundle without the slot (it was stamped already, or the bundler changed) stops the task.
 */
import { gitRevision, REVISION_SLOT } from "../lib/version.ts";

const [file] = Deno.args;
if (!file) {
  console.error("usage: stamp_revision.ts BUNDLE_FILE");
  Deno.exit(2);
}
const bundle = await Deno.readTextFile(file);
if (!bundle.includes(REVISION_SLOT)) {
  console.error(`stamp_revision: ${file} holds no revision slot ${REVISION_SLOT}`);
  Deno.exit(1);
}
const revision = gitRevision(new URL("../", import.meta.url)) ?? "unknown";
await Deno.writeTextFile(file, bundle.replaceAll(REVISION_SLOT, revision));
