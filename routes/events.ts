/**
 * The event export's state (decisions §7) and its live stream (docs/cti.md):
 *
 * - `GET /events/deliveries` shows the pending and dead-letter counts, the last failure and the
 *   dead letters; `POST /events/deadletters/retry` puts the dead letters back in the outbox.
 * - `GET /events/stream` (ACL `svc.rest.events.read`) is a Server-Sent Events stream of the events
 *   that go to `SVC_EVENT_URL`, from every process sharing the store: `id:` the event id (the
 *   `X-Svc-Event-Id` of the post), `event:` its `msgType`, `data:` the posted JSON (supervision's
 *   `QueueStatistics`, username "", included). `?username=` keeps one user's events. A CTI user
 *   whose rights profile is a supervisor's or an admin's (lib/rights/) may read it too: its stream
 *   carries the `QueueStatistics` of the queues its profile covers, and nothing else (its profile
 *   read again every {@link RIGHTS_RECHECK_MS}: a change shows within that). A client
 *   reconnecting with `Last-Event-ID` (header, or the `lastEventId` query value) first gets the
 *   events after that id still retained (the retention, one minute at least). A comment every 15 s keeps proxies from closing an idle stream; a client
 *   with more than `SVC_CTI_SEND_BUFFER` bytes unread is sent an `overflow` event and closed.
 */
import * as z from "zod";
import { operation } from "../lib/openapi/operation.ts";
import { Hono } from "hono";
import { requireAcl } from "../lib/auth/guard.ts";
import { requireRights } from "../lib/rights/guard.ts";
import {
  ALL_RIGHTS,
  type Coverage,
  covers,
  EVERYTHING,
  NOTHING,
  rightsOf,
} from "../lib/rights/rights.ts";
import { ApiError } from "../lib/errors.ts";
import { type ExportedMessage, isExported } from "../lib/events/messages.ts";
import type { LogEntry } from "../lib/events/outbox.ts";
import type { AppEnv } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";

/** What an event id looks like (`lib/events/outbox.ts` EventIds). */
const EVENT_ID = /^\d{13}-\d{6}-[a-z0-9]{4}$/;
const KEEPALIVE_MS = 15_000;
/** How often a CTI user's stream reads its rights profile again (ms). */
export const RIGHTS_RECHECK_MS = 500;
/** Retained events read per store round trip on a resume. */
const RESUME_BATCH = 500;

const encoder = new TextEncoder();

const frame = ({ id, event }: LogEntry<ExportedMessage>) =>
  encoder.encode(`id: ${id}\nevent: ${event.message.msgType}\ndata: ${JSON.stringify(event)}\n\n`);

export function eventRoutes(services: Services): Hono<AppEnv> {
  const { tokens, events } = services;
  return new Hono<AppEnv>()
    .get(
      "/events/deliveries",
      requireAcl(tokens, "svc.rest.events.deliveries.read"),
      operation(() => ({
        summary: "How the delivery of events to `eventUrl` goes: pending, dead letters, last error",
        responses: {
          // built on first use (`z.lazy`), not at every start (docs/performance.md)
          200: z.object({
            pending: z.int(),
            deadLetters: z.int(),
            lastError: z.unknown(),
            deadLetterEvents: z.array(z.looseObject({ id: z.string(), attempts: z.int() })),
          }),
        },
      }), async (c) => c.json(await events.deliveries())),
    )
    .post(
      "/events/deadletters/retry",
      requireAcl(tokens, "svc.rest.events.deadletters.retry.create"),
      operation(() => ({
        summary: "Puts the dead letters back in the outbox",
        responses: { 200: z.object({ requeued: z.int() }) },
      }), async (c) => c.json({ requeued: await events.retryDeadLetters() })),
    )
    .get(
      "/events/stream",
      requireRights(services, "svc.rest.events.read"),
      operation(() => ({
        summary: "The events, live, as a server-sent event stream (never ends)",
        query: z.object({
          username: z.string().optional().meta({ description: "Only this user's events" }),
          lastEventId: z.string().optional().meta({ description: "Resume after this event id" }),
        }),
        headers: { "Last-Event-ID": "Resume after this event id (what browsers send)" },
        responses: { 200: { mediaType: "text/event-stream", description: "The stream" } },
        errors: { 400: "`BadRequest`: the event id is no event id of this server" },
      }), (c) => {
        const username = c.req.query("username");
        const resumeFrom = c.req.header("last-event-id") ?? c.req.query("lastEventId") ?? null;
        if (resumeFrom !== null && !EVENT_ID.test(resumeFrom)) {
          throw new ApiError(400, "BadRequest", "Last-Event-ID is no event id of this server");
        }
        // a rights profile's stream (not the ACL's): the queue statistics it covers
        const supervisor = c.get("rights") === ALL_RIGHTS ? null : Number(c.get("identity").userId);
        // through the context, which adds the request's headers (`X-Request-Id`)
        return c.newResponse(eventStream(services, username ?? null, resumeFrom, supervisor), {
          headers: {
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-store",
            "X-Accel-Buffering": "no", // nginx: pass each event on at once
          },
        });
      }),
    );
}

/**
 * The stream: live events are taken from the moment it starts, held while the retained ones after
 * `resumeFrom` are read and sent, then sent after them, each id once. `supervisor`: the CTI user
 * whose rights profile decides what it carries (null: a token holding the ACL, everything).
 */
function eventStream(
  services: Services,
  username: string | null,
  resumeFrom: string | null,
  supervisor: number | null,
): ReadableStream<Uint8Array> {
  const { feed, clock, config } = services;
  let unsubscribe = () => {};
  let cancelKeepalive = () => {};
  let cancelRights = () => {};
  let closed = false;
  /** What the stream carries: everything, or the queues a rights profile covers. */
  let coverage: Coverage = supervisor === null ? EVERYTHING : NOTHING;
  const readRights = async () => {
    try {
      coverage = (await rightsOf(services.store, supervisor!))?.coverage ?? NOTHING;
    } catch (error) {
      services.logger.warn("event stream rights not read", { error: String(error) });
    }
    if (!closed) cancelRights = clock.after(RIGHTS_RECHECK_MS, readRights);
  };
  /** An event a supervisor's stream carries: the statistics of a queue it covers. */
  const covered = ({ message }: ExportedMessage) =>
    message.msgType === "QueueStatistics" &&
    covers(coverage.queues, (message.ctiMessage as { queueId: number }).queueId);
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      /** Bytes queued and not yet read by the client. */
      const queued = () => -(controller.desiredSize ?? 0);
      const stop = () => {
        closed = true;
        unsubscribe();
        cancelKeepalive();
        cancelRights();
      };
      const send = (chunk: Uint8Array) => {
        if (closed) return;
        if (queued() > config.ctiSendBuffer) {
          controller.enqueue(encoder.encode("event: overflow\ndata: {}\n\n"));
          stop();
          controller.close();
          return;
        }
        controller.enqueue(chunk);
      };
      /** The newest retained event read on a resume: held live events up to it were sent. */
      let lastRead = resumeFrom ?? "";
      let held: LogEntry<ExportedMessage>[] | null = [];
      if (supervisor !== null) await readRights();
      const wanted = (entry: LogEntry<ExportedMessage>) =>
        isExported(entry.event) && (username === null || entry.event.username === username) &&
        (supervisor === null || covered(entry.event));
      // every event: a supervision event (username "") too, unless one user's are asked for
      unsubscribe = feed.subscribeAll((entries) => {
        for (const entry of entries) {
          if (!wanted(entry)) continue;
          if (held) held.push(entry);
          else send(frame(entry));
        }
      });
      const keepalive = () => {
        cancelKeepalive = clock.after(KEEPALIVE_MS, () => {
          send(encoder.encode(": keepalive\n\n"));
          if (!closed) keepalive();
        });
      };
      keepalive();
      send(encoder.encode("retry: 1000\n\n"));
      if (resumeFrom !== null) {
        try {
          for (;;) {
            const batch = await feed.after(lastRead, RESUME_BATCH);
            for (const entry of batch) if (wanted(entry)) send(frame(entry));
            if (batch.length) lastRead = batch.at(-1)!.id;
            if (batch.length < RESUME_BATCH) break;
          }
        } catch (error) {
          services.logger.warn("event stream resume failed", { error: String(error) });
        }
      }
      const waiting = held;
      held = null;
      for (const entry of waiting) if (entry.id > lastRead) send(frame(entry));
    },
    cancel() {
      closed = true;
      unsubscribe();
      cancelKeepalive();
      cancelRights();
    },
  }, { highWaterMark: 0, size: (chunk) => chunk.byteLength }); // desiredSize = -bytes queued
}
