/**
 * Jobs of the configuration daemon (docs/confd.md, "Imports as jobs"): a request sent with
 * `Prefer: respond-async` is answered `202 Accepted` with its job at once, the work goes on in
 * this process, and `GET /1.1/jobs/{id}` tells, from any process sharing the store, how it goes
 * and, once it ended, what the request would have answered.
 */
import type { Context } from "hono";
import { Hono } from "hono";
import { isAllowed } from "../../lib/auth/acl.ts";
import { fillAcl } from "../../lib/auth/guard.ts";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import {
  type JobOutcome,
  type JobRecord,
  JobRun,
  readJob,
  readOutcomeBody,
} from "../../lib/store/jobs.ts";
import { confdAnswer, notFound } from "./errors.ts";
import { confdUser } from "./guard.ts";

/** Who may read any job, not only their own. */
const READ_ACL = "confd.jobs.{id}.read";

/**
 * True when the request's `Prefer` headers (RFC 7240) hold the preference `respond-async`, in any
 * case, alone or among others (`Prefer: respond-async, wait=10`).
 *
 * @example
 * prefersAsync("respond-async, wait=10"); // true
 */
export function prefersAsync(header: string | undefined): boolean {
  return (header ?? "").split(",").some((preference) =>
    preference.split(/[=;]/)[0]!.trim().toLowerCase() === "respond-async"
  );
}

const iso = (ms: number | null) => ms === null ? null : new Date(ms).toISOString();

/** A job as `GET /1.1/jobs/{id}` answers it; `body` is its outcome's, once it ended. */
function jobView(job: JobRecord, body: unknown) {
  const status = job.outcome?.status ?? null;
  return {
    id: job.id,
    request: job.request,
    state: job.state,
    rows: job.rows,
    status,
    result: status !== null && status < 300 ? body : null,
    errors: status !== null && status >= 300 ? body : null,
    created_at: iso(job.created_at),
    finished_at: iso(job.finished_at),
  };
}

/**
 * Answers 202 with a new job of the caller for `request` (e.g. `POST /1.1/users/import`) and runs
 * `work` in the background. `work` answers the outcome (or ends the job itself, inside its last
 * commit); a failure is kept as the answer the request would have had at once.
 *
 * @example
 * return await startJob(c, services, "POST /1.1/users/import", (job) => importCreate(store, text, job));
 */
export async function startJob(
  c: Context<AppEnv>,
  { store, clock, logger }: Services,
  request: string,
  work: (job: JobRun) => Promise<JobOutcome>,
): Promise<Response> {
  const requestId = c.get("requestId");
  const job = await JobRun.create(store, clock, { request, owner: c.get("identity").userId });
  logger.info("job started", { requestId, job: job.id, request });
  const pending = jobView(job.record, null);
  // from the next turn of the event loop: the 202 goes out before the file is read
  setTimeout(async () => {
    let outcome: JobOutcome;
    try {
      outcome = await work(job);
    } catch (error) {
      const { status, body } = confdAnswer(logger, requestId, error as Error);
      outcome = { status, body };
    }
    try {
      await job.finish(outcome);
      logger.info("job ended", { requestId, job: job.id, status: outcome.status });
    } catch (error) {
      logger.warn("job not ended", { requestId, job: job.id, error: String(error) });
    }
  }, 0);
  c.header("Location", `/1.1/jobs/${job.id}`);
  c.header("Preference-Applied", "respond-async");
  return c.json(pending, 202);
}

export function jobRoutes(services: Services) {
  const { store, clock, tokens } = services;
  return new Hono<AppEnv>().get("/jobs/:id", confdUser(tokens), async (c) => {
    const id = c.req.param("id");
    const identity = c.get("identity");
    const job = await readJob(store, clock, id);
    const mayRead = job?.owner === identity.userId ||
      isAllowed(identity.acls, fillAcl(READ_ACL, { id }), identity.userId);
    // someone else's job is answered as an unknown one: its id tells nothing
    if (!job || !mayRead) throw notFound("Job", { id });
    return c.json(jobView(job, await readOutcomeBody(store, job)));
  });
}
