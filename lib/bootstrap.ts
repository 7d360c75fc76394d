/** What every store needs before serving: default contexts, the administrator, the demo data. */
import { loadDemo } from "./demo.ts";
import type { Services } from "./services.ts";
import { recoverBulkWrites } from "./store/bulk.ts";
import { ensureDefaultContexts } from "./store/contexts.ts";
import { ensureAdmin, hasWebServiceUsers } from "./store/webservice_users.ts";

/**
 * Prepares the store; safe to run at every start and from several processes at once.
 *
 * @example
 * await prepareStore(await createServices(config));
 */
export async function prepareStore(services: Services): Promise<void> {
  const { config, logger, store, clock } = services;
  const undone = await recoverBulkWrites(store, clock.now());
  if (undone) logger.warn("unfinished imports undone", { count: undone });
  if (await ensureDefaultContexts(store)) logger.info("default contexts created");
  if (config.adminLogin && config.adminPassword) {
    await ensureAdmin(store, config.adminLogin, config.adminPassword);
    logger.info("administrator ready", { login: config.adminLogin });
  }
  if (config.demo && await loadDemo(services)) logger.info("demo data set loaded");
  // a first start without an administrator serves nothing anyone can use: say what to set
  if (!config.demo && !await hasWebServiceUsers(store)) {
    logger.warn(
      "no web service user yet: set SVC_ADMIN_LOGIN and SVC_ADMIN_PASSWORD to create an " +
        "administrator (or SVC_DEMO=true to try svc with demo data)",
    );
  }
}
