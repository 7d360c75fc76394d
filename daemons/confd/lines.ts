/**
 * `/1.1/lines` and every association of a line: its users (`/users/{id}/lines/{line_id}`, or all
 * of a user's lines at once; first user = main user, first line = main line), extensions (one line
 * per extension, 14.14), endpoint (sip, sccp or custom, one each way) and device. Both sides of an
 * association change in one transaction (docs/confd.md). A line's caller id follows its main user
 * unless written explicitly (`followMainUserIn`). Also the deprecated `/lines_sip` list.
 */
import { type Context, Hono } from "hono";
import * as z from "zod";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import { devices, deviceStatus } from "../../lib/store/devices.ts";
import {
  ENDPOINT_TYPES,
  endpointCollection,
  type EndpointType,
  getEndpoint,
  type SipEndpointRecord,
  sipEndpoints,
} from "../../lib/store/endpoints.ts";
import { type ExtensionRecord, extensions } from "../../lib/store/extensions.ts";
import {
  followMainUserIn,
  getLine,
  type LineRecord,
  lines,
  linesOfUser,
  newLineName,
  newProvisioningCode,
} from "../../lib/store/lines.ts";
import {
  type Collection,
  transact,
  type Transaction,
  unusedValue,
} from "../../lib/store/records.ts";
import type { Store } from "../../lib/store/store.ts";
import { type UserRecord, users } from "../../lib/store/users.ts";
import { check, fields, pathId, readBody } from "./body.ts";
import { loadOr404, type Resource, resourceRoutes, withConflicts } from "./crud.ts";
import { loadDevice } from "./devices.ts";
import { ENDPOINT_LABELS, endpointView } from "./endpoints.ts";
import { describe, inputError, notFound, resourceError } from "./errors.ts";
import { requireContext, requireUserRange } from "./extensions.ts";
import { confdAcl } from "./guard.ts";
import { listItems } from "./list.ts";
import { loadUser } from "./users.ts";

const LINE = "Line";

/**
 * The registrar of a line on the only PBX server: lines show it, and bodies may name it (or null,
 * meaning it). With several Asterisk servers a line's registrar is the server it is placed on
 * (docs/decisions.md, "A line's server is its registrar"): a body names one of them, `default` or
 * null meaning the main one (the first).
 */
const REGISTRAR = "default";

/** The PBX servers' names, the main one first; null with one server. */
type ServerNames = () => string[] | null;

/** The registrar a line shows: its server's name, `default` with one server. */
function registrarOf(line: LineRecord, servers: string[] | null): string {
  if (!servers) return REGISTRAR;
  return line.registrar !== undefined && servers.includes(line.registrar)
    ? line.registrar
    : servers[0]!;
}

/**
 * The `registrar` a body names, as the record keeps it: undefined for the main server (or when
 * the body names none), a server's name for another; an unknown one is refused.
 */
function placement(
  registrar: string | null | undefined,
  servers: string[] | null,
): string | undefined {
  if (registrar === undefined || registrar === null || registrar === REGISTRAR) return undefined;
  if (!servers?.includes(registrar)) {
    throw inputError("registrar", `Registrar was not found ${describe({ id: registrar })}`);
  }
  return registrar === servers[0] ? undefined : registrar;
}

/** The fields a line's creation and change share (a function: built with the schemas, on use). */
const editable = () => ({
  position: fields.integer(1, 2147483647).optional(),
  provisioning_code: z.string().regex(/^\d{6}$/, "Must be 6 digits.").optional(),
  caller_id_name: fields.text(80).optional(),
  caller_id_num: fields.text(80).refine((num) => num === null || /^\+?[0-9*#]+$/.test(num), {
    message: "Must be digits, optionally with a leading +, * and #.",
  }).optional(),
  registrar: fields.text(128).optional(),
});

// built on first use (`z.lazy`), not at every start (docs/performance.md)
/** Read-only fields (`name`, `protocol`, `device_slot`, `provisioning_extension`…) are dropped. */
const createSchema = z.lazy(() => z.object({ context: fields.name(39), ...editable() }));
const updateSchema = z.lazy(() => z.object({ context: fields.name(39).optional(), ...editable() }));

const LINE_LIST = {
  fields: [
    "id",
    "name",
    "protocol",
    "context",
    "position",
    "device_slot",
    "provisioning_code",
    "provisioning_extension",
    "caller_id_name",
    "caller_id_num",
    "registrar",
    "device_id",
  ],
  search: ["name", "protocol", "context", "provisioning_code", "caller_id_name", "caller_id_num"],
};

/** `GET /devices/{id}/lines` items: `{line_id, device_id}`, as the daemon this API follows. */
const DEVICE_LINE_LIST = { fields: ["line_id", "device_id"], search: [] };

/** `PUT /users/{id}/lines`: every line of the user, the main line first. */
const userLinesSchema = z.lazy(() =>
  z.object({
    lines: z.array(z.object({ id: z.number().int("Not a valid integer.") })),
  })
);

const USER_LIST = {
  fields: ["id", "uuid", "firstname", "lastname", "main_user"],
  search: ["firstname", "lastname"],
};

/** The deprecated `/lines_sip` item: a line with its SIP account, in the 15.16 field names. */
const SIP_LINE_LIST = {
  fields: ["id", "username", "context", "provisioning_extension", "device_slot", "callerid"],
  search: ["username", "context", "callerid"],
};

/** How a line shows its users (and `/lines/{id}/users` lists them). */
const userSummary = (user: UserRecord) => ({
  id: user.id,
  uuid: user.uuid,
  firstname: user.firstname,
  lastname: user.lastname,
});

/** The records of `ids` that exist, by id. */
async function byId<T extends { id: number }>(
  store: Store,
  collection: Collection<T>,
  ids: number[],
): Promise<Map<number, T>> {
  const found = await Promise.all([...new Set(ids)].map((id) => collection.get(store, id)));
  return new Map(found.filter((record) => record !== null).map((record) => [record.id, record]));
}

/** `ids` mapped through `records`, skipping any that is gone. */
const pick = <T, V>(ids: number[], records: Map<number, T>, show: (record: T) => V) =>
  ids.flatMap((id) => {
    const record = records.get(id);
    return record === undefined ? [] : [show(record)];
  });

/**
 * The API shape of a line: the old names `device_slot` and `provisioning_extension` (15.17,
 * 14.13) beside the new ones, and its associations as references.
 */
function lineView(
  line: LineRecord,
  related: {
    extensions: Map<number, ExtensionRecord>;
    users: Map<number, UserRecord>;
    servers: string[] | null;
  },
) {
  const endpoint = (type: EndpointType) =>
    line.endpoint?.type === type ? { id: line.endpoint.id } : null;
  return {
    id: line.id,
    name: line.name,
    protocol: line.protocol,
    context: line.context,
    position: line.position,
    device_slot: line.position,
    provisioning_code: line.provisioning_code,
    provisioning_extension: line.provisioning_code,
    caller_id_name: line.caller_id_name,
    caller_id_num: line.caller_id_num,
    registrar: registrarOf(line, related.servers),
    device_id: line.device_id,
    endpoint_sip: endpoint("sip"),
    endpoint_sccp: endpoint("sccp"),
    endpoint_custom: endpoint("custom"),
    extensions: pick(line.extension_ids, related.extensions, ({ id, exten, context }) => ({
      id,
      exten,
      context,
    })),
    users: pick(line.user_ids, related.users, userSummary),
  };
}

/** The views of `records`, reading the extensions and users they show. */
async function lineViews(store: Store, records: LineRecord[], servers: string[] | null) {
  const related = {
    extensions: await byId(store, extensions, records.flatMap((line) => line.extension_ids)),
    users: await byId(store, users, records.flatMap((line) => line.user_ids)),
    servers,
  };
  return records.map((line) => lineView(line, related));
}

/** A deprecated `/lines_sip` item. */
function sipLineView(line: LineRecord, sip: SipEndpointRecord) {
  const { caller_id_name: name, caller_id_num: num } = line;
  return {
    id: line.id,
    username: sip.username,
    secret: sip.secret,
    context: line.context,
    provisioning_extension: line.provisioning_code,
    device_slot: line.position,
    callerid: [name && `"${name}"`, num && `<${num}>`].filter(Boolean).join(" ") || null,
  };
}

/** What keeps a line from being deleted, as the daemon words it. */
function blockingAssociation(line: LineRecord): string | null {
  if (line.endpoint) return ENDPOINT_LABELS[line.endpoint.type];
  if (line.extension_ids.length) return "Extension";
  if (line.user_ids.length) return "User";
  if (line.device_id !== null) return "Device";
  return null;
}

const already = (what: string, other: string, ids: Record<string, unknown>) =>
  resourceError(`${what} is already associated with a ${other} ${describe(ids)}`);

const notAssociated = (what: string, other: string, ids: Record<string, unknown>) =>
  resourceError(`${what} is not associated with the ${other} ${describe(ids)}`);

const loadLine = (tx: Transaction, id: number) => loadOr404(tx, lines, LINE, id);

const loadEndpoint = (tx: Transaction, type: EndpointType, id: number) =>
  loadOr404(tx, endpointCollection(type), ENDPOINT_LABELS[type], id);

const loadExtension = (tx: Transaction, id: number) => loadOr404(tx, extensions, "Extension", id);

/**
 * The line CRUD routes' resource; the body is checked before an id is made or a line read. A line
 * placed on another server (`registrar`) moves when a PUT names another: svc writes both servers'
 * files again.
 */
const lineResource = (servers: ServerNames): Resource<
  LineRecord,
  ReturnType<typeof lineView>,
  z.infer<typeof createSchema> & { server?: string },
  z.infer<typeof updateSchema> & { server?: string }
> => ({
  path: "/lines",
  label: LINE,
  collection: lines,
  views: (store, records) => lineViews(store, records, servers()),
  ...LINE_LIST,
  bodies: {
    create: (body) => {
      const input = check(createSchema, body);
      return { ...input, server: placement(input.registrar, servers()) };
    },
    update: (body) => {
      const input = check(updateSchema, body);
      return { ...input, server: placement(input.registrar, servers()) };
    },
  },
  async create(tx, input, id) {
    await requireContext(tx, input.context);
    const callerId = {
      caller_id_name: input.caller_id_name ?? null,
      caller_id_num: input.caller_id_num ?? null,
    };
    return {
      id,
      name: await unusedValue(tx, lines, "name", newLineName),
      protocol: null,
      context: input.context,
      position: input.position ?? 1,
      provisioning_code: input.provisioning_code ??
        await unusedValue(tx, lines, "provisioning_code", newProvisioningCode),
      ...callerId,
      caller_id_explicit: callerId.caller_id_name !== null || callerId.caller_id_num !== null,
      device_id: null,
      endpoint: null,
      extension_ids: [],
      user_ids: [],
      ...(input.server === undefined ? {} : { registrar: input.server }),
    };
  },
  async update(tx, line, input) {
    const { registrar, server, ...changes } = input;
    if (changes.context !== undefined) await requireContext(tx, changes.context);
    const next: LineRecord = { ...line, ...changes };
    // a body naming no registrar leaves the line where it is
    if (registrar !== undefined) {
      delete next.registrar;
      if (server !== undefined) next.registrar = server;
    }
    if (changes.caller_id_name === undefined && changes.caller_id_num === undefined) return next;
    // a caller id written with a value stays; written null (both parts), it follows the main user
    if (next.caller_id_name !== null || next.caller_id_num !== null) {
      return { ...next, caller_id_explicit: true };
    }
    return await followMainUserIn(tx, { ...next, caller_id_explicit: false });
  },
  beforeDelete(_tx, line) {
    const association = blockingAssociation(line);
    if (association) throw resourceError(`Line is associated with a ${association}`);
    return Promise.resolve();
  },
});

export function lineRoutes(services: Services) {
  const { store, tokens } = services;
  /** Runs `fn` as one transaction, a taken unique value answering `Line already exists`. */
  const commit = <R>(fn: (tx: Transaction) => Promise<R>) =>
    withConflicts({ label: LINE }, () => transact(store, fn));
  /** The line of the path's `id`. */
  const pathLine = (tx: Transaction, c: Context) => loadLine(tx, pathId(c, LINE));
  /** The user of the path's `id` (an integer id or a uuid). */
  const pathUser = (tx: Transaction, c: Context) => loadUser(tx, c.req.param("id") ?? "");
  const servers: ServerNames = () =>
    services.platform.servers?.().map((server) => server.name) ?? null;

  const app = new Hono<AppEnv>()
    .get("/lines_sip", confdAcl(tokens, "confd.lines_sip.read"), async (c) => {
      const sipLines = (await lines.all(store)).filter((line) => line.endpoint?.type === "sip");
      const accounts = await byId(store, sipEndpoints, sipLines.map((line) => line.endpoint!.id));
      const items = sipLines.flatMap((line) => {
        const sip = accounts.get(line.endpoint!.id);
        return sip ? [sipLineView(line, sip)] : [];
      });
      c.header("Deprecation", "true");
      return c.json(listItems(c, items, SIP_LINE_LIST));
    })
    .get("/lines/:id/users", confdAcl(tokens, "confd.lines.{id}.users.read"), async (c) => {
      const line = await transact(store, (tx) => pathLine(tx, c));
      const items = pick(line.user_ids, await byId(store, users, line.user_ids), (user) => ({
        ...userSummary(user),
        main_user: user.id === line.user_ids[0],
      }));
      return c.json(listItems(c, items, USER_LIST));
    })
    .get("/users/:id/lines", confdAcl(tokens, "confd.users.{id}.lines.read"), async (c) => {
      const user = await transact(store, (tx) => pathUser(tx, c));
      const views = await lineViews(store, await linesOfUser(store, user), servers());
      const items = views.map((view) => ({ ...view, main_line: view.id === user.line_ids[0] }));
      return c.json(
        listItems(c, items, { ...LINE_LIST, fields: [...LINE_LIST.fields, "main_line"] }),
      );
    })
    .put("/users/:id/lines", confdAcl(tokens, "confd.users.{id}.lines.update"), async (c) => {
      const ids = (await readBody(c, userLinesSchema)).lines.map((line) => line.id);
      if (new Set(ids).size !== ids.length) {
        throw resourceError("Operation not permitted. Cannot associate same line more than once");
      }
      await commit((tx) => replaceUserLines(tx, c, ids));
      return c.body(null, 204);
    })
    .get(
      "/users/:id/lines/:line_id/associated/endpoints/sip",
      confdAcl(tokens, "confd.users.{id}.lines.{line_id}.associated.endpoints.sip.read"),
      async (c) => {
        const line = await transact(store, (tx) => userLine(tx, c));
        const sip = line.endpoint?.type === "sip"
          ? await getEndpoint(store, "sip", line.endpoint.id)
          : null;
        if (!sip) throw notFound(ENDPOINT_LABELS.sip, { line_id: line.id });
        return c.json(endpointView(sip));
      },
    )
    .get("/lines/:id/devices", confdAcl(tokens, "confd.lines.{id}.devices.read"), async (c) => {
      const line = await transact(store, (tx) => pathLine(tx, c));
      if (line.device_id === null) throw notFound("LineDevice", { line_id: line.id });
      return c.json({ line_id: line.id, device_id: line.device_id });
    })
    .get("/devices/:id/lines", confdAcl(tokens, "confd.devices.{id}.lines.read"), async (c) => {
      const device = await transact(store, (tx) => loadDevice(tx, c.req.param("id")));
      const items = device.line_ids.map((lineId) => ({ line_id: lineId, device_id: device.id }));
      return c.json(listItems(c, items, DEVICE_LINE_LIST));
    });

  addAssociationRoutes(
    "/lines/:id/devices/:device_id",
    "confd.lines.{id}.devices.{device_id}",
    async (tx, c) => {
      const line = await pathLine(tx, c);
      const device = await loadDevice(tx, c.req.param("device_id") ?? "");
      return { line, device, ids: { line_id: line.id, device_id: device.id } };
    },
    (tx, { line, device, ids }) => {
      if (line.device_id !== null) throw already(LINE, "Device", ids);
      const lineIds = [...device.line_ids, line.id];
      tx.put(lines, { ...line, device_id: device.id });
      tx.put(devices, { ...device, line_ids: lineIds, status: deviceStatus(lineIds) });
    },
    (tx, { line, device, ids }) => {
      if (line.device_id !== device.id) throw notAssociated(LINE, "Device", ids);
      const lineIds = device.line_ids.filter((id) => id !== line.id);
      tx.put(lines, { ...line, device_id: null });
      tx.put(devices, { ...device, line_ids: lineIds, status: deviceStatus(lineIds) });
    },
  );
  addAssociationRoutes(
    "/lines/:id/extensions/:extension_id",
    "confd.lines.{id}.extensions.{extension_id}",
    async (tx, c) => {
      const line = await pathLine(tx, c);
      const extension = await loadExtension(tx, pathId(c, "Extension", "extension_id"));
      return { line, extension };
    },
    async (tx, { line, extension }) => {
      if (extension.line_id !== null) {
        throw already("Extension", LINE, { extension_id: extension.id, line_id: line.id });
      }
      if (extension.conference_id != null) {
        const ids = { extension_id: extension.id, conference_id: extension.conference_id };
        throw already("Extension", "Conference", ids);
      }
      if (line.user_ids.length) await requireUserRange(tx, extension);
      const extensionIds = [...line.extension_ids, extension.id];
      tx.put(lines, await followMainUserIn(tx, { ...line, extension_ids: extensionIds }));
      tx.put(extensions, { ...extension, line_id: line.id });
    },
    async (tx, { line, extension }) => {
      if (extension.line_id !== line.id) {
        throw notAssociated(LINE, "Extension", { line_id: line.id, extension_id: extension.id });
      }
      const extensionIds = line.extension_ids.filter((id) => id !== extension.id);
      tx.put(lines, await followMainUserIn(tx, { ...line, extension_ids: extensionIds }));
      tx.put(extensions, { ...extension, line_id: null });
    },
  );
  addAssociationRoutes(
    "/users/:id/lines/:line_id",
    "confd.users.{id}.lines.{line_id}",
    async (tx, c) => {
      const user = await pathUser(tx, c);
      const line = await loadLine(tx, pathId(c, LINE, "line_id"));
      return { user, line, ids: { user_id: user.id, line_id: line.id } };
    },
    async (tx, { user, line, ids }) => {
      if (line.user_ids.includes(user.id)) throw already("User", LINE, ids);
      for (const id of line.extension_ids) {
        await requireUserRange(tx, await loadExtension(tx, id));
      }
      const linked = { ...user, line_ids: [...user.line_ids, line.id] };
      tx.put(users, linked);
      const userIds = [...line.user_ids, user.id];
      tx.put(
        lines,
        await followMainUserIn(tx, { ...line, user_ids: userIds }, { users: [linked] }),
      );
    },
    async (tx, { user, line, ids }) => {
      if (!line.user_ids.includes(user.id)) throw notAssociated("User", LINE, ids);
      const unlinked = { ...user, line_ids: user.line_ids.filter((id) => id !== line.id) };
      tx.put(users, unlinked);
      const userIds = line.user_ids.filter((id) => id !== user.id);
      tx.put(
        lines,
        await followMainUserIn(tx, { ...line, user_ids: userIds }, { users: [unlinked] }),
      );
    },
  );
  for (const type of ENDPOINT_TYPES) addEndpointRoutes(type);
  app.route("/", resourceRoutes(services, lineResource(servers)));
  return app;

  /**
   * The line of `/users/{id}/lines/{line_id}/…`: `main` names the user's main line; another line
   * must be one of the user's. 404 otherwise.
   */
  async function userLine(tx: Transaction, c: Context): Promise<LineRecord> {
    const user = await pathUser(tx, c);
    if (c.req.param("line_id") === "main") {
      const id = user.line_ids[0];
      const main = id === undefined ? null : await tx.get(lines, id);
      if (!main) throw notFound(LINE, { user_uuid: user.uuid });
      return main;
    }
    const line = await loadLine(tx, pathId(c, LINE, "line_id"));
    if (!user.line_ids.includes(line.id)) {
      throw notFound("UserLine", { user_id: user.id, line_id: line.id });
    }
    return line;
  }

  /**
   * Makes `ids` the lines of the path's user, in that order (the first is the main line): the
   * user joins the new lines (last of their users) and leaves the others; every line that changed
   * follows its main user's caller id. Any refusal leaves everything as it was.
   */
  async function replaceUserLines(tx: Transaction, c: Context, ids: number[]): Promise<void> {
    const user = await pathUser(tx, c);
    const chosen: LineRecord[] = [];
    for (const id of ids) {
      const line = await tx.get(lines, id);
      if (!line) throw inputError("lines", `Line was not found ${describe({ id })}`);
      chosen.push(line);
    }
    const changed: LineRecord[] = [];
    for (const line of chosen) {
      if (line.user_ids.includes(user.id)) continue;
      for (const id of line.extension_ids) {
        await requireUserRange(tx, await loadExtension(tx, id));
      }
      changed.push({ ...line, user_ids: [...line.user_ids, user.id] });
    }
    for (const id of user.line_ids.filter((id) => !ids.includes(id))) {
      const line = await tx.get(lines, id);
      if (line) changed.push({ ...line, user_ids: line.user_ids.filter((u) => u !== user.id) });
    }
    const updated: UserRecord = { ...user, line_ids: ids };
    tx.put(users, updated);
    for (const line of changed) {
      tx.put(lines, await followMainUserIn(tx, line, { users: [updated] }));
    }
  }

  /**
   * PUT (`link`) and DELETE (`unlink`) of `path`, ACLs `<acl>.update` and `<acl>.delete`: each
   * reads what the path names with `load` and changes both sides in one transaction; 204.
   */
  function addAssociationRoutes<P>(
    path: string,
    acl: string,
    load: (tx: Transaction, c: Context) => Promise<P>,
    link: (tx: Transaction, pair: P) => Promise<void> | void,
    unlink: (tx: Transaction, pair: P) => Promise<void> | void,
  ) {
    app.put(path, confdAcl(tokens, `${acl}.update`), async (c) => {
      await commit(async (tx) => link(tx, await load(tx, c)));
      return c.body(null, 204);
    });
    app.delete(path, confdAcl(tokens, `${acl}.delete`), async (c) => {
      await commit(async (tx) => unlink(tx, await load(tx, c)));
      return c.body(null, 204);
    });
  }

  /** The line ↔ endpoint routes of one endpoint type. */
  function addEndpointRoutes(type: EndpointType) {
    const label = ENDPOINT_LABELS[type];
    const collection = endpointCollection(type);
    const base = `/lines/:id/endpoints/${type}`;
    const acl = `confd.lines.{id}.endpoints.${type}`;

    app.get(base, confdAcl(tokens, `${acl}.read`), async (c) => {
      const line = await transact(store, (tx) => pathLine(tx, c));
      const endpoint = line.endpoint?.type === type
        ? await getEndpoint(store, type, line.endpoint.id)
        : null;
      if (!endpoint) throw notFound(label, { line_id: line.id });
      return c.json({
        line_id: line.id,
        endpoint_id: endpoint.id,
        endpoint: endpointView(endpoint),
      });
    });
    addAssociationRoutes(
      `${base}/:endpoint_id`,
      `${acl}.{endpoint_id}`,
      async (tx, c) => {
        const line = await pathLine(tx, c);
        const endpoint = await loadEndpoint(tx, type, pathId(c, label, "endpoint_id"));
        return { line, endpoint, ids: { line_id: line.id, endpoint_id: endpoint.id } };
      },
      (tx, { line, endpoint, ids }) => {
        if (line.endpoint) throw already(LINE, ENDPOINT_LABELS[line.endpoint.type], ids);
        if (endpoint.line_id !== null) throw already(label, LINE, ids);
        tx.put(lines, { ...line, protocol: type, endpoint: { type, id: endpoint.id } });
        tx.put(collection, { ...endpoint, line_id: line.id });
      },
      (tx, { line, endpoint, ids }) => {
        if (line.endpoint?.type !== type || line.endpoint.id !== endpoint.id) {
          throw notAssociated(LINE, label, ids);
        }
        tx.put(lines, { ...line, protocol: null, endpoint: null });
        tx.put(collection, { ...endpoint, line_id: null });
      },
    );
    app.get(
      `/endpoints/${type}/:id/lines`,
      confdAcl(tokens, `confd.endpoints.${type}.{id}.lines.read`),
      async (c) => {
        const endpoint = await transact(store, (tx) => loadEndpoint(tx, type, pathId(c, label)));
        const line = endpoint.line_id === null ? null : await getLine(store, endpoint.line_id);
        return c.json(
          listItems(c, await lineViews(store, line ? [line] : [], servers()), LINE_LIST),
        );
      },
    );
  }
}
