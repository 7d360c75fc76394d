/**
 * `/1.1/voicemails` and `/1.1/users/{id}/voicemails`: mailboxes, `(number, context)` unique. A
 * user has at most one voicemail; no line is needed (15.15); a voicemail id that does not exist
 * is 400, not 404 (14.16); voicemails stay editable while associated (15.15). A voicemail shows
 * its users as `{id, uuid, firstname, lastname}`.
 */
import type { Context } from "hono";
import * as z from "zod";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import { transact, type Transaction } from "../../lib/store/records.ts";
import type { Store } from "../../lib/store/store.ts";
import { users } from "../../lib/store/users.ts";
import {
  linkUserVoicemail,
  unlinkUserVoicemail,
  type VoicemailRecord,
  voicemails,
} from "../../lib/store/voicemails.ts";
import { check, fields } from "./body.ts";
import { type Resource, resourceRoutes } from "./crud.ts";
import { associationHandler, userListHandler } from "./entities.ts";
import { alreadyExists, describe, inputError, resourceError } from "./errors.ts";
import { requireContext } from "./extensions.ts";
import { confdAcl } from "./guard.ts";
import { loadUser } from "./users.ts";

const digits = (max: number) =>
  z.string().regex(/^\d+$/, "Must be digits.").max(max, `Longer than maximum length ${max}.`);

/** A voicemail's body (a function: the schemas below build it on first use). */
const voicemailObject = () =>
  z.object({
    name: fields.name(80),
    number: digits(40),
    context: fields.name(39),
    password: digits(80).nullable().optional(),
    email: fields.text(80).optional(),
    pager: fields.text(80).optional(),
    language: fields.text(20).optional(),
    timezone: fields.text(80).optional(),
    max_messages: fields.integer(0, 1_000_000).nullable().optional(),
    attach_audio: fields.boolean().optional(),
    delete_messages: fields.boolean().optional(),
    ask_password: fields.boolean().optional(),
    enabled: fields.boolean().optional(),
    options: z.array(z.tuple([z.string(), z.string()])).optional(),
  });

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const schema = z.lazy(voicemailObject);
const updateSchema = z.lazy(() => voicemailObject().partial());

/** The views of `records`: `users: [{id, uuid, firstname, lastname}]`, users read at once. */
async function voicemailViews(store: Store, records: VoicemailRecord[]) {
  const ids = [...new Set(records.flatMap((record) => record.user_ids))];
  const found = await Promise.all(ids.map((id) => users.get(store, id)));
  const byId = new Map(found.filter((user) => user !== null).map((user) => [user.id, user]));
  return records.map(({ user_ids, ...voicemail }) => ({
    ...voicemail,
    users: user_ids.flatMap((id) => {
      const user = byId.get(id);
      if (!user) return [];
      const { uuid, firstname, lastname } = user;
      return [{ id, uuid, firstname, lastname }];
    }),
  }));
}

export const voicemailResource: Resource<
  VoicemailRecord,
  Awaited<ReturnType<typeof voicemailViews>>[number]
> = {
  path: "/voicemails",
  label: "Voicemail",
  collection: voicemails,
  views: voicemailViews,
  fields: [
    "id",
    "name",
    "number",
    "context",
    "password",
    "email",
    "pager",
    "language",
    "timezone",
    "max_messages",
    "attach_audio",
    "delete_messages",
    "ask_password",
    "enabled",
  ],
  search: ["name", "number", "context", "email", "pager"],
  async create(tx, body, id) {
    const input = check(schema, body);
    await requireContext(tx, input.context);
    return {
      id,
      password: null,
      email: null,
      pager: null,
      language: null,
      timezone: null,
      max_messages: null,
      attach_audio: false,
      delete_messages: false,
      ask_password: true,
      enabled: true,
      options: [],
      user_ids: [],
      ...input,
    };
  },
  async update(tx, current, body) {
    const next = { ...current, ...check(updateSchema, body) };
    if (next.context !== current.context) await requireContext(tx, next.context);
    return next;
  },
  beforeDelete(_tx, voicemail) {
    if (voicemail.user_ids.length) throw resourceError("Voicemail is associated with a User");
    return Promise.resolve();
  },
  conflict(error) {
    const [context, number] = [error.value].flat();
    return alreadyExists("Voicemail", { number, context });
  },
};

/** The voicemail of the path's `voicemail_id`, or 400 when there is none (14.16). */
async function loadVoicemail(tx: Transaction, c: Context<AppEnv>): Promise<VoicemailRecord> {
  const raw = c.req.param("voicemail_id") ?? "";
  const id = /^\d{1,15}$/.test(raw) ? Number(raw) : raw;
  const voicemail = typeof id === "number" ? await tx.get(voicemails, id) : null;
  if (!voicemail) {
    throw inputError("voicemail_id", `Voicemail was not found ${describe({ id })}`);
  }
  return voicemail;
}

/**
 * The voicemail CRUD routes and the user → voicemail association routes; `DELETE
 * /users/{id}/voicemails` dissociates the user's voicemail, whichever it is (204 when none).
 */
export function voicemailRoutes(services: Services) {
  const { store, tokens } = services;
  const one = "/users/:id/voicemails/:voicemail_id";
  return resourceRoutes(services, voicemailResource)
    .get(
      "/users/:id/voicemails",
      confdAcl(tokens, "confd.users.{id}.voicemails.read"),
      userListHandler(
        store,
        ({ id, voicemail_id }) => voicemail_id === null ? [] : [{ user_id: id, voicemail_id }],
      ),
    )
    .delete(
      "/users/:id/voicemails",
      confdAcl(tokens, "confd.users.{id}.voicemails.delete"),
      async (c) => {
        await transact(store, async (tx) => {
          const user = await loadUser(tx, c.req.param("id"));
          if (user.voicemail_id === null) return;
          const voicemail = await tx.get(voicemails, user.voicemail_id);
          if (voicemail) unlinkUserVoicemail(tx, user, voicemail);
          else tx.put(users, { ...user, voicemail_id: null });
        });
        return c.body(null, 204);
      },
    )
    .put(
      one,
      confdAcl(tokens, "confd.users.{id}.voicemails.{voicemail_id}.update"),
      associationHandler(
        store,
        loadVoicemail,
        (user) =>
          user.voicemail_id === null
            ? null
            : `User already has a Voicemail ${
              describe({ user_id: user.id, voicemail_id: user.voicemail_id })
            }`,
        linkUserVoicemail,
      ),
    )
    .delete(
      one,
      confdAcl(tokens, "confd.users.{id}.voicemails.{voicemail_id}.delete"),
      associationHandler(
        store,
        loadVoicemail,
        (user, voicemail) =>
          user.voicemail_id === voicemail.id
            ? null
            : `User is not associated with this Voicemail ${
              describe({ user_id: user.id, voicemail_id: voicemail.id })
            }`,
        unlinkUserVoicemail,
      ),
    );
}
