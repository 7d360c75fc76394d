/**
 * Entry for Deno Deploy: the configuration comes from the project's environment variables, the
 * store is the deployment's managed KV (`Deno.openKv()` with no path; Deploy refuses any other
 * database) unless `SVC_KV` names one, and Deploy itself chooses the address to serve on.
 *
 * Deploy: `deployctl deploy --entrypoint=deploy/deno_deploy.ts` (see deploy/README.md).
 */
import { prepareStore, startBackground } from "../lib/bootstrap.ts";
import { loadConfig } from "../lib/config.ts";
import { createServices } from "../lib/services.ts";
import { Store } from "../lib/store/store.ts";
import { serverApp } from "../routes/app.ts";

const env = Deno.env.toObject();
// Deploy's logs are what the console writes
const config = { ...loadConfig(env), logToConsole: true };
const store = await Store.open(env.SVC_KV ? config.kv : null);
const services = await createServices(config, { store });
await prepareStore(services);
// the same background work as `deno task start`: events posted, the platform followed, crons
startBackground(services);

// the API areas loaded and declared at their first request, as `deno task start` does
Deno.serve(serverApp(services).fetch);
