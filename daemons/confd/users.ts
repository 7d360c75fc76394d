/**
 * `/1.1/users`: users addressed by id or uuid, their services (DND, incoming call filter) and
 * forwards. A user with a username and a password is a CTI user (one record, `lib/store/users.ts`).
 * The lines a user is the main user of follow its caller id (`followUserInLines`).
 */
import { Hono } from "hono";
import * as z from "zod";
import { hashPassword } from "../../lib/auth/passwords.ts";
import type { AppEnv } from "../../lib/http.ts";
import { deletePresenceOfUser } from "../../lib/presence/store.ts";
import { forgetUser } from "../../lib/rights/profiles.ts";
import type { Services } from "../../lib/services.ts";
import { deleteContactsOfUser } from "../../lib/store/contacts.ts";
import { deleteFavoritesOfUser } from "../../lib/store/favorites.ts";
import { deletePushTokensOfUser } from "../../lib/store/push_tokens.ts";
import { extensions } from "../../lib/store/extensions.ts";
import { followUserInLines, lines } from "../../lib/store/lines.ts";
import { allOf, transact, type Transaction } from "../../lib/store/records.ts";
import type { Store } from "../../lib/store/store.ts";
import { switchboards } from "../../lib/store/switchboards.ts";
import {
  FORWARD_KINDS,
  InvalidUserServices,
  MAX_DESTINATION_LENGTH,
  setForward,
  setForwards,
  setService,
  setServices,
  type UserServicesResult,
} from "../../lib/user_services.ts";
import {
  buildUser,
  type ForwardKind,
  type ServiceName,
  type UserRecord,
  users,
} from "../../lib/store/users.ts";
import { fields, readBody } from "./body.ts";
import { withConflicts } from "./crud.ts";
import { inputError, notFound, resourceError } from "./errors.ts";
import { confdAcl } from "./guard.ts";
import { listItems, listJson } from "./list.ts";

const SERVICE_NAMES: readonly ServiceName[] = ["dnd", "incallfilter"];

const text = fields.text;
/** The fields a user's creation and change share (a function: built with the schemas, on use). */
const editable = () => ({
  lastname: text(128).optional(),
  email: text(254).refine((v) => v === null || /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(v), {
    message: "Not a valid email address.",
  }).optional(),
  username: text(254).refine((v) => v === null || /^[a-zA-Z0-9_.@+-]{2,254}$/.test(v), {
    message: "Must be 2 or more letters, digits or the characters _ . @ + -.",
  }).optional(),
  password: z.string().min(4, "Shorter than minimum length 4.").max(
    64,
    "Longer than maximum length 64.",
  )
    .nullable().optional(),
  caller_id: text(80).optional(),
  outgoing_caller_id: text(80).optional(),
  mobile_phone_number: text(80).refine((v) => v === null || /^\+?[0-9*#]*$/.test(v), {
    message: "Must be digits, optionally with a leading +, * and #.",
  }).optional(),
  language: text(20).refine((v) => v === null || /^[a-z]{2}_[A-Z]{2}$/.test(v), {
    message: "Must be a locale such as fr_FR.",
  }).optional(),
  timezone: text(128).optional(),
  description: text(4096).optional(),
  userfield: text(128).optional(),
  line_type: text(64).optional(),
  enabled: fields.boolean().optional(),
  call_permission_password: text(16).refine((v) => v === null || /^\d+$/.test(v), {
    message: "Must be digits.",
  }).optional(),
  supervision_enabled: fields.boolean().optional(),
  call_tranfer_enabled: fields.boolean().optional(),
  ring_seconds: fields.integer(0, 10800).optional(),
  simultaneous_calls: fields.integer(1, 20).optional(),
});

// built on first use (`z.lazy`), not at every start (docs/performance.md)
export const userCreateSchema = z.lazy(() =>
  z.object({ firstname: fields.name(128), ...editable() })
);
export const userUpdateSchema = z.lazy(() =>
  z.object({ firstname: fields.name(128).optional(), ...editable() })
);

/**
 * The API shape of a user: every field but the password hash and the internal last event id,
 * associations as references.
 */
export function userView(user: UserRecord) {
  const {
    password_hash: _hash,
    last_event_id: _lastEvent,
    line_ids,
    voicemail_id,
    callpermission_ids,
    ...visible
  } = user;
  return {
    ...visible,
    lines: line_ids.map((id) => ({ id })),
    voicemail: voicemail_id === null ? null : { id: voicemail_id },
    call_permissions: callpermission_ids.map((id) => ({ id })),
  };
}

export const USER_FIELDS = [
  "id",
  "uuid",
  "firstname",
  "lastname",
  "email",
  "username",
  "caller_id",
  "outgoing_caller_id",
  "mobile_phone_number",
  "language",
  "timezone",
  "description",
  "userfield",
  "line_type",
  "enabled",
  "call_permission_password",
  "supervision_enabled",
  "call_tranfer_enabled",
  "ring_seconds",
  "simultaneous_calls",
] as const;

const SUMMARY_FIELDS = [
  "id",
  "uuid",
  "firstname",
  "lastname",
  "email",
  "provisioning_code",
  "extension",
  "context",
  "protocol",
  "enabled",
] as const;

/**
 * The `view=summary` shape (16.04): a user with its main line's protocol, context, provisioning
 * code and first extension. Users, lines and extensions are read once for the whole list, at one
 * state of the store (`allOf`).
 */
async function userSummaries(store: Store) {
  const [all, lineList, extensionList] = await allOf(store, [users, lines, extensions]);
  const lineById = new Map(lineList.map((line) => [line.id, line]));
  const extensionById = new Map(extensionList.map((e) => [e.id, e]));
  return all.map((user) => {
    const line = user.line_ids.length ? lineById.get(user.line_ids[0]!) : undefined;
    const extension = line?.extension_ids.length
      ? extensionById.get(line.extension_ids[0]!)
      : undefined;
    return {
      id: user.id,
      uuid: user.uuid,
      firstname: user.firstname,
      lastname: user.lastname,
      email: user.email,
      provisioning_code: line?.provisioning_code ?? null,
      extension: extension?.exten ?? null,
      context: line?.context ?? null,
      protocol: line?.protocol ?? null,
      enabled: user.enabled,
    };
  });
}

const SEARCHED = [
  "firstname",
  "lastname",
  "email",
  "username",
  "caller_id",
  "description",
  "userfield",
  "mobile_phone_number",
];

/** The user of a path value: an integer id or a uuid, read in `tx`; 404 otherwise. */
export async function loadUser(tx: Transaction, idOrUuid: string): Promise<UserRecord> {
  const user = /^\d{1,15}$/.test(idOrUuid)
    ? await tx.get(users, Number(idOrUuid))
    : await tx.findBy(users, "uuid", idOrUuid);
  if (!user) {
    throw notFound("User", /^\d+$/.test(idOrUuid) ? { id: Number(idOrUuid) } : { uuid: idOrUuid });
  }
  return user;
}

/** Applies validated fields; the caller id is never regenerated from a name change (15.14). */
async function applyFields(
  user: UserRecord,
  input: z.infer<typeof userUpdateSchema>,
): Promise<UserRecord> {
  const { password, ...rest } = input;
  const changed: UserRecord = { ...user, ...rest };
  if (password !== undefined) {
    changed.password_hash = password === null ? null : await hashPassword(password);
  }
  return changed;
}

/** What keeps a user from being deleted, as the daemon words it. */
function blockingAssociation(user: UserRecord): string | null {
  if (user.line_ids.length) return "Line";
  if (user.voicemail_id !== null) return "Voicemail";
  if (user.callpermission_ids.length) return "CallPermission";
  return null;
}

const forwardSchema = z.lazy(() =>
  z.object({
    enabled: fields.boolean().optional(),
    destination: text(MAX_DESTINATION_LENGTH).optional(),
  })
);

const forwardsSchema = z.lazy(() =>
  z.object(Object.fromEntries(FORWARD_KINDS.map((kind) => [kind, forwardSchema.optional()])))
);

const serviceSchema = z.lazy(() => z.object({ enabled: fields.boolean() }));

/** `PUT /users/{id}/services`: the services present change; one without `enabled` keeps it. */
const servicesSchema = z.lazy(() => {
  const change = z.object({ enabled: fields.boolean().optional() }).optional();
  return z.object(Object.fromEntries(SERVICE_NAMES.map((name) => [name, change])));
});

/** User fields a line's caller id is made of (`mainUserCallerId`). */
const CALLER_ID_FIELDS = ["caller_id", "firstname", "lastname"] as const;

/**
 * Runs a change of DND or forwards through `lib/user_services.ts`, as the 2.0 routes do (so the
 * `UserConfigUpdate` event and the platform follow); its refusals become `Input Error`s.
 */
async function changeServices(
  change: () => Promise<UserServicesResult | null>,
  userId: number,
): Promise<void> {
  try {
    if (!await change()) throw notFound("User", { id: userId });
  } catch (error) {
    if (!(error instanceof InvalidUserServices)) throw error;
    throw inputError(
      error.field,
      error.reason === "destination_required"
        ? "An enabled forward needs a destination."
        : `Longer than maximum length ${MAX_DESTINATION_LENGTH}.`,
    );
  }
}

export function userRoutes(services: Services) {
  const { store, tokens } = services;
  const conflict = { label: "User" };

  const readUser = (idOrUuid: string) => transact(store, (tx) => loadUser(tx, idOrUuid));

  return new Hono<AppEnv>()
    .get("/users", confdAcl(tokens, "confd.users.read"), async (c) => {
      if (c.req.query("view") === "summary") {
        return c.json(listItems(c, await userSummaries(store), {
          fields: SUMMARY_FIELDS,
          search: ["firstname", "lastname", "email", "extension", "provisioning_code"],
        }));
      }
      // the records hold every listed field, so only the page is turned into views (and kept)
      const all = await users.all(store);
      return listJson(c, all, { fields: USER_FIELDS, search: SEARCHED, view: userView });
    })
    .post("/users", confdAcl(tokens, "confd.users.create"), async (c) => {
      const input = await readBody(c, userCreateSchema);
      const id = await users.nextId(store);
      const user = await buildUser(id, input);
      await withConflicts(
        conflict,
        () => transact(store, (tx) => Promise.resolve(tx.put(users, user))),
      );
      c.header("Location", `/1.1/users/${id}`);
      return c.json(userView(user), 201);
    })
    .get("/users/:id", confdAcl(tokens, "confd.users.{id}.read"), async (c) => {
      return c.json(userView(await readUser(c.req.param("id"))));
    })
    .put("/users/:id", confdAcl(tokens, "confd.users.{id}.update"), async (c) => {
      const input = await readBody(c, userUpdateSchema);
      const callerIdChanges = CALLER_ID_FIELDS.some((field) => input[field] !== undefined);
      await withConflicts(conflict, () =>
        transact(store, async (tx) => {
          const user = await applyFields(await loadUser(tx, c.req.param("id")), input);
          tx.put(users, user);
          if (callerIdChanges) await followUserInLines(tx, user);
        }));
      return c.body(null, 204);
    })
    .delete("/users/:id", confdAcl(tokens, "confd.users.{id}.delete"), async (c) => {
      const userId = await transact(store, async (tx) => {
        const user = await loadUser(tx, c.req.param("id"));
        // read through the transaction: a switchboard taking the user meanwhile reruns the delete
        const member = (await tx.all(switchboards)).some((switchboard) =>
          (switchboard.member_user_ids ?? []).includes(user.id)
        );
        const association = blockingAssociation(user) ?? (member ? "Switchboard" : null);
        if (association) throw resourceError(`User is associated with a ${association}`);
        tx.remove(users, user.id);
        forgetUser(tx, user.id); // its rights profile goes with it
        return user.id;
      });
      // the user's own data goes with it: contacts, favourites, push registrations and presence
      // are no one else's
      await deleteContactsOfUser(store, userId);
      await deleteFavoritesOfUser(store, userId);
      await deletePushTokensOfUser(store, userId);
      await deletePresenceOfUser(store, userId);
      return c.body(null, 204);
    })
    .get("/users/:id/services", confdAcl(tokens, "confd.users.{id}.services.read"), async (c) => {
      return c.json((await readUser(c.req.param("id"))).services);
    })
    .put("/users/:id/services", confdAcl(tokens, "confd.users.{id}.services.update"), async (c) => {
      const input = await readBody(c, servicesSchema) as Partial<
        Record<ServiceName, { enabled?: boolean }>
      >;
      const { id } = await readUser(c.req.param("id"));
      const changes: Partial<Record<ServiceName, boolean>> = {};
      for (const service of SERVICE_NAMES) {
        const enabled = input[service]?.enabled;
        if (enabled !== undefined) changes[service] = enabled;
      }
      await changeServices(() => setServices(services, id, changes), id);
      return c.body(null, 204);
    })
    .get(
      "/users/:id/services/:service",
      confdAcl(tokens, "confd.users.{id}.services.{service}.read"),
      async (c) => {
        const service = serviceName(c.req.param("service"));
        return c.json((await readUser(c.req.param("id"))).services[service]);
      },
    )
    .put(
      "/users/:id/services/:service",
      confdAcl(tokens, "confd.users.{id}.services.{service}.update"),
      async (c) => {
        const service = serviceName(c.req.param("service"));
        const { enabled } = await readBody(c, serviceSchema);
        const { id } = await readUser(c.req.param("id"));
        await changeServices(() => setService(services, id, service, enabled), id);
        return c.body(null, 204);
      },
    )
    .get("/users/:id/forwards", confdAcl(tokens, "confd.users.{id}.forwards.read"), async (c) => {
      return c.json((await readUser(c.req.param("id"))).forwards);
    })
    .put("/users/:id/forwards", confdAcl(tokens, "confd.users.{id}.forwards.update"), async (c) => {
      const input = await readBody(c, forwardsSchema) as Partial<
        Record<ForwardKind, z.infer<typeof forwardSchema>>
      >;
      const { id } = await readUser(c.req.param("id"));
      await changeServices(() => setForwards(services, id, input), id);
      return c.body(null, 204);
    })
    .get(
      "/users/:id/forwards/:kind",
      confdAcl(tokens, "confd.users.{id}.forwards.{kind}.read"),
      async (c) => {
        const kind = forwardKind(c.req.param("kind"));
        return c.json((await readUser(c.req.param("id"))).forwards[kind]);
      },
    )
    .put(
      "/users/:id/forwards/:kind",
      confdAcl(tokens, "confd.users.{id}.forwards.{kind}.update"),
      async (c) => {
        const kind = forwardKind(c.req.param("kind"));
        const input = await readBody(c, forwardSchema);
        const { id } = await readUser(c.req.param("id"));
        await changeServices(() => setForward(services, id, kind, input), id);
        return c.body(null, 204);
      },
    );
}

function serviceName(raw: string): ServiceName {
  if ((SERVICE_NAMES as string[]).includes(raw)) return raw as ServiceName;
  throw notFound("Service", { name: raw });
}

function forwardKind(raw: string): ForwardKind {
  if ((FORWARD_KINDS as string[]).includes(raw)) return raw as ForwardKind;
  throw notFound("Forward", { name: raw });
}
