/**
 * `/1.1/conferences` (docs/meetingrooms.md): the static meeting rooms, with Wazo's fields (PIN,
 * admin PIN, size limit, music on hold, join and leave sounds, recording), reached by the one
 * extension associated with each (`PUT|DELETE /conferences/{id}/extensions/{extension_id}`: an
 * extension of an internal context, in its conference room ranges, held by no line nor other
 * conference). Deleting a conference frees its extension and hangs up whoever is in it.
 */
import { type Context, Hono } from "hono";
import * as z from "zod";
import type { AppEnv } from "../../lib/http.ts";
import { hangUpRoom } from "../../lib/meetingrooms/rooms.ts";
import { conferenceRoomId } from "../../lib/platform/rooms.ts";
import type { Services } from "../../lib/services.ts";
import {
  buildConference,
  type ConferenceRecord,
  conferences,
} from "../../lib/store/conferences.ts";
import { type ExtensionRecord, extensions } from "../../lib/store/extensions.ts";
import { transact, type Transaction } from "../../lib/store/records.ts";
import { check, fields, pathId } from "./body.ts";
import { loadOr404, type Resource, resourceRoutes } from "./crud.ts";
import { describe, resourceError } from "./errors.ts";
import { requireConferenceRange } from "./extensions.ts";
import { confdAcl } from "./guard.ts";

/** A PIN: digits, 80 at most (Wazo's), or null. */
const pin = () =>
  z.string().max(80, "Longer than maximum length 80.").regex(/^\d*$/, "Invalid value.")
    .nullable();

/** What a conference's creation and change take (a function: built with the schemas, on use). */
const editable = () => ({
  name: fields.text(128).optional(),
  preprocess_subroutine: fields.text(39).optional(),
  max_users: fields.integer(0, 2147483647).optional(),
  record: fields.boolean().optional(),
  pin: pin().optional(),
  admin_pin: pin().optional(),
  quiet_join_leave: fields.boolean().optional(),
  announce_join_leave: fields.boolean().optional(),
  announce_user_count: fields.boolean().optional(),
  announce_only_user: fields.boolean().optional(),
  music_on_hold: fields.text(128).optional(),
});

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const schema = z.lazy(() => z.object(editable()));

const FIELDS = [
  "id",
  "name",
  "preprocess_subroutine",
  "max_users",
  "record",
  "pin",
  "admin_pin",
  "quiet_join_leave",
  "announce_join_leave",
  "announce_user_count",
  "announce_only_user",
  "music_on_hold",
] as const;

/** A conference as Wazo shows it: its extensions (one at most), no incall here. */
function conferenceView(conference: ConferenceRecord, extensionList: readonly ExtensionRecord[]) {
  return {
    ...conference,
    extensions: extensionList
      .filter((extension) => extension.conference_id === conference.id)
      .map(({ id, exten, context }) => ({ id, exten, context })),
    incalls: [] as unknown[],
  };
}

/** An empty string is no PIN (a client clearing the field). */
const withPins = <T extends { pin?: string | null; admin_pin?: string | null }>(input: T) => ({
  ...input,
  ...(input.pin !== undefined && { pin: input.pin || null }),
  ...(input.admin_pin !== undefined && { admin_pin: input.admin_pin || null }),
});

function conferenceResource(
  services: Services,
): Resource<ConferenceRecord, ReturnType<typeof conferenceView>> {
  return {
    path: "/conferences",
    label: "Conference",
    collection: conferences,
    async views(store, records) {
      const extensionList = await extensions.all(store);
      return records.map((record) => conferenceView(record, extensionList));
    },
    fields: FIELDS,
    search: ["name"],
    schemas: { create: schema, update: schema },
    create(_tx, body, id) {
      return Promise.resolve(buildConference(id, withPins(check(schema, body))));
    },
    update(_tx, current, body) {
      return Promise.resolve({ ...current, ...withPins(check(schema, body)) });
    },
    /** Its extension is freed (Wazo does the same). */
    async beforeDelete(tx, conference) {
      for (const extension of await tx.all(extensions)) {
        if (extension.conference_id === conference.id) {
          tx.put(extensions, { ...extension, conference_id: null });
        }
      }
    },
    afterDelete: (_store, deleted) => hangUpRoom(services, conferenceRoomId(deleted.id)),
  };
}

/** `PUT|DELETE /conferences/{id}/extensions/{extension_id}`. */
function extensionRoutes(services: Services) {
  const { store, tokens } = services;
  const path = "/conferences/:id/extensions/:extension_id";
  const acl = "confd.conferences.{id}.extensions.{extension_id}";
  const load = async (tx: Transaction, c: Context) => ({
    conference: await loadOr404(tx, conferences, "Conference", pathId(c, "Conference")),
    extension: await loadOr404(
      tx,
      extensions,
      "Extension",
      pathId(c, "Extension", "extension_id"),
    ),
  });
  return new Hono<AppEnv>()
    .put(path, confdAcl(tokens, `${acl}.update`), async (c) => {
      await transact(store, async (tx) => {
        const { conference, extension } = await load(tx, c);
        const ids = { conference_id: conference.id, extension_id: extension.id };
        const held = (await tx.all(extensions)).find((other) =>
          other.conference_id === conference.id
        );
        if (held?.id === extension.id) return; // already so
        if (held) {
          throw resourceError(
            `Conference is already associated to an Extension ${
              describe({ conference_id: conference.id, extension_id: held.id })
            }`,
          );
        }
        if (extension.line_id !== null) {
          throw resourceError(`Extension is associated with a Line ${describe(ids)}`);
        }
        if (extension.conference_id != null) {
          throw resourceError(`Extension is associated with a Conference ${describe(ids)}`);
        }
        await requireConferenceRange(tx, extension);
        tx.put(extensions, { ...extension, conference_id: conference.id });
      });
      return c.body(null, 204);
    })
    .delete(path, confdAcl(tokens, `${acl}.delete`), async (c) => {
      await transact(store, async (tx) => {
        const { conference, extension } = await load(tx, c);
        if (extension.conference_id !== conference.id) {
          throw resourceError(
            `Conference is not associated with Extension ${
              describe({ conference_id: conference.id, extension_id: extension.id })
            }`,
          );
        }
        tx.put(extensions, { ...extension, conference_id: null });
      });
      return c.body(null, 204);
    });
}

export function conferenceRoutes(services: Services) {
  const app = new Hono<AppEnv>();
  app.route("/", extensionRoutes(services));
  app.route("/", resourceRoutes(services, conferenceResource(services)));
  return app;
}
