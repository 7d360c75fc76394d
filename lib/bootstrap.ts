/**
 * What every server does before serving, whatever starts it (`main.ts`, `deploy/deno_deploy.ts`):
 * the store's defaults (contexts, the administrator, the demo data), then the work that runs in
 * the background (event delivery, the platform, supervision's publisher, the crons).
 */
import { migrateSupervisors } from "./rights/migration.ts";
import type { Services } from "./services.ts";
import { recoverBulkWrites } from "./store/bulk.ts";
import { pruneCallsBefore } from "./store/call_history.ts";
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
  const admin = config.adminLogin && config.adminPassword
    ? { login: config.adminLogin, password: config.adminPassword }
    : null;
  // reads that need not wait for each other, at once: each Deno KV call waits for the store's
  // thread (2-3 ms of every start one after the other; docs/performance.md). No staged write is
  // of web service users, so undoing one cannot change whether there is any. The supervisors of
  // an earlier version get their rights profiles (lib/rights/migration.ts: one read once done),
  // before the demo data set makes its own users.
  const [undone, contextsCreated, anyUser] = await Promise.all([
    recoverBulkWrites(store, clock.now()),
    ensureDefaultContexts(store),
    admin || config.demo ? true : hasWebServiceUsers(store),
    migrateSupervisors(store, logger),
  ]);
  if (undone) logger.warn("unfinished imports undone", { count: undone });
  if (contextsCreated) logger.info("default contexts created");
  if (admin) {
    await ensureAdmin(store, admin.login, admin.password);
    logger.info("administrator ready", { login: admin.login });
  }
  // the demo data set is imported in demo mode only: most starts never read it
  if (config.demo && await (await import("./demo.ts")).loadDemo(services)) {
    logger.info("demo data set loaded");
  }
  // a first start without an administrator serves nothing anyone can use: say what to set
  if (!anyUser) {
    logger.warn(
      "no web service user yet: set SVC_ADMIN_LOGIN and SVC_ADMIN_PASSWORD to create an " +
        "administrator (or SVC_DEMO=true to try svc with demo data)",
    );
  }
}

/**
 * Starts what runs in the background: event delivery, the platform, supervision's
 * `QueueStatistics` publisher, and the crons (redelivery, prunes, stale imports). `Deno.cron`
 * must exist (`--unstable-cron`, or Deno Deploy).
 *
 * @example
 * await prepareStore(services);
 * startBackground(services);
 */
export function startBackground(services: Services): void {
  const { config, store, clock } = services;
  // events: delivered in the background from now on; the cron pass each minute (under the lease in
  // the store) also picks up what another process left behind, e.g. one that was killed
  services.events.start();
  services.platform.start();
  // QueueStatistics events, at most one a second per queue whose figures changed
  services.supervision.start();
  Deno.cron("redeliver events", "* * * * *", async () => {
    await services.events.deliverDue();
  });
  // supervision's day counters past the retention (also pruned when the counting starts a day)
  Deno.cron("prune supervision days", "17 * * * *", async () => {
    await services.supervision.prune();
  });
  // the call history past its retention (SVC_CALL_HISTORY_RETENTION_DAYS)
  Deno.cron("prune call history", "23 * * * *", async () => {
    const days = config.callHistoryRetentionDays;
    await pruneCallsBefore(store, clock.now() - days * 86_400_000);
  });
  // a process that died in the middle of an import leaves a journal: undo it once it is stale
  Deno.cron("undo unfinished imports", "* * * * *", async () => {
    await recoverBulkWrites(store, clock.now());
  });
}
