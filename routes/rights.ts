/**
 * Supervisors' rights profiles in the 2.0 API (docs/supervision.md, "Who is a supervisor"): per
 * CTI user, none, `admin` or `supervisor` (its queues, agent groups and incoming-call numbers, and
 * its rights), kept by lib/rights/profiles.ts. Managed by a web service user holding the route's
 * ACL (`svc.rest.rights.profiles.#`: not under `svc.rest.config.#`, which CTI users hold), or by a
 * CTI user whose own profile is `admin`.
 *
 * - `GET /rights/profiles` (`svc.rest.rights.profiles.read`): every profile, in user id order, as
 *   JSON, or CSV with `Accept: text/csv`.
 * - `POST /rights/profiles/import` (`svc.rest.rights.profiles.update`): a CSV file as the export
 *   writes it; every line is checked first, then all are written in one commit, or none.
 * - `GET`, `PUT`, `DELETE /rights/profiles/{userId}` (`….{userId}.read`, `.update`, `.delete`).
 *
 * A change reaches the user's sockets as a new `RightProfile`, and what they follow is filtered
 * by it within a second (lib/cti/supervision.ts); the next request reads it.
 */
import { type Context, Hono } from "hono";
import * as z from "zod";
import { agentGroups } from "../lib/agent_groups/store.ts";
import { parseCsv, toCsv, unneutraliseCell } from "../lib/csv.ts";
import { announceProfiles } from "../lib/cti_session/right_profile.ts";
import { ApiError } from "../lib/errors.ts";
import { type AppEnv, readBody } from "../lib/http.ts";
import { operation } from "../lib/openapi/operation.ts";
import { requireRights } from "../lib/rights/guard.ts";
import {
  adminProfile,
  deleteProfile,
  listProfiles,
  profileOf,
  type RightsProfileRecord,
  rightsProfiles,
} from "../lib/rights/profiles.ts";
import type { Services } from "../lib/services.ts";
import { queues } from "../lib/store/queues.ts";
import { transact, type Transaction } from "../lib/store/records.ts";
import { getUser, type UserRecord, users } from "../lib/store/users.ts";

/** Most ids (or numbers) one list of a profile holds. */
const MAX_LIST = 1_000;
/** Most lines an import takes: they are written in one commit. */
export const MAX_IMPORT_LINES = 500;
const CANONICAL_ID = /^(0|[1-9]\d{0,14})$/;
/** An incoming-call number: digits, `*`, `#`, a leading `+`. */
const INCALL = /^\+?[0-9*#]{1,40}$/;

const invalid = (message: string) => new ApiError(400, "InvalidProfile", message);
const userNotFound = (shown: string) =>
  new ApiError(404, "UserNotFound", `user ${shown} does not exist`);
const profileNotFound = (id: number) =>
  new ApiError(404, "ProfileNotFound", `user ${id} has no rights profile`);

const ids = () => z.array(z.int().min(0).max(Number.MAX_SAFE_INTEGER)).max(MAX_LIST);

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const profileBody = z.lazy(() =>
  z.discriminatedUnion("profile", [
    z.strictObject({ profile: z.literal("admin") }).meta({
      description: "Every queue, agent and agent group, every right",
    }),
    z.strictObject({
      profile: z.literal("supervisor"),
      queueIds: ids().default([]).meta({ description: "The queues it supervises" }),
      groupIds: ids().default([]).meta({
        description: "The agent groups it supervises (their agents with them)",
      }),
      incalls: z.array(z.string().regex(INCALL, "expected an incoming-call number")).max(MAX_LIST)
        .default([]).meta({ description: "Incoming-call numbers (kept; nothing uses them yet)" }),
      recording: z.boolean().default(false).meta({ description: "Access to recordings" }),
      listen: z.boolean().default(false).meta({ description: "Listening to its agents" }),
      changeQueues: z.boolean().default(false).meta({
        description: "Changing its agents' queues (memberships, agent group moves)",
      }),
    }),
  ], { error: 'field profile: expected "admin" or "supervisor"' })
);

type ProfileBody = z.infer<typeof profileBody>;

const profileView = z.lazy(() =>
  z.object({
    userId: z.int(),
    username: z.string().nullable(),
    profile: z.enum(["admin", "supervisor"]),
    queueIds: z.array(z.int()).optional(),
    groupIds: z.array(z.int()).optional(),
    incalls: z.array(z.string()).optional(),
    recording: z.boolean().optional(),
    listen: z.boolean().optional(),
    changeQueues: z.boolean().optional(),
  }).meta({ description: "An admin's holds `userId`, `username` and `profile` only" })
);

/** A profile as the API shows it. */
function view(profile: RightsProfileRecord, username: string | null) {
  if (profile.profile === "admin") {
    return { userId: profile.id, username, profile: profile.profile };
  }
  return {
    userId: profile.id,
    username,
    profile: profile.profile,
    queueIds: profile.queue_ids,
    groupIds: profile.group_ids,
    incalls: profile.incalls,
    recording: profile.recording,
    listen: profile.listen,
    changeQueues: profile.change_queues,
  };
}

/** The record a body makes for `userId`. */
function recordOf(userId: number, body: ProfileBody): RightsProfileRecord {
  if (body.profile === "admin") return adminProfile(userId);
  const unique = <T>(items: T[]) => [...new Set(items)];
  return {
    id: userId,
    profile: "supervisor",
    queue_ids: unique(body.queueIds).sort((a, b) => a - b),
    group_ids: unique(body.groupIds).sort((a, b) => a - b),
    incalls: unique(body.incalls),
    recording: body.recording,
    listen: body.listen,
    change_queues: body.changeQueues,
  };
}

/**
 * What is wrong with giving `profile` to `user` in `tx` (the queues and groups read there, so a
 * deletion meanwhile makes the commit run again), or null.
 */
async function problem(
  tx: Transaction,
  user: UserRecord | null,
  profile: RightsProfileRecord,
): Promise<string | null> {
  if (!user) return `user ${profile.id} does not exist`;
  if (!user.username) return `user ${profile.id} is no CTI user (it has no username)`;
  const [queueList, groupList] = await Promise.all([tx.all(queues), tx.all(agentGroups)]);
  const queueIds = new Set(queueList.map((queue) => queue.id));
  const groupIds = new Set(groupList.map((group) => group.id));
  const queue = profile.queue_ids.find((id) => !queueIds.has(id));
  if (queue !== undefined) return `queue ${queue} does not exist`;
  const group = profile.group_ids.find((id) => !groupIds.has(id));
  if (group !== undefined) return `agent group ${group} does not exist`;
  return null;
}

/** The user id of the path: 404 `UserNotFound` for a value that is no id. */
function pathUserId(c: Context): number {
  const value = c.req.param("userId") ?? "";
  if (!CANONICAL_ID.test(value)) throw userNotFound(value);
  return Number(value);
}

/** A CSV answer is asked for: `Accept` names `text/csv`. */
const wantsCsv = (c: Context) =>
  /(^|,)\s*text\/csv\s*(;[^,]*)?(,|$)/i.test(c.req.header("accept") ?? "");

/** The columns of the CSV export and import. */
export const CSV_COLUMNS = [
  "user_id",
  "username",
  "profile",
  "queue_ids",
  "group_ids",
  "incalls",
  "recording",
  "listen",
  "change_queues",
] as const;

/** One profile as a CSV row: lists space-separated; an admin's other cells empty. */
function csvRow(profile: RightsProfileRecord, username: string | null): string[] {
  const head = [String(profile.id), username ?? "", profile.profile];
  if (profile.profile === "admin") return [...head, "", "", "", "", "", ""];
  return [
    ...head,
    profile.queue_ids.join(" "),
    profile.group_ids.join(" "),
    profile.incalls.join(" "),
    String(profile.recording),
    String(profile.listen),
    String(profile.change_queues),
  ];
}

/** One line of an import: the user, and the body its cells make (null: no profile). */
interface ImportLine {
  line: number;
  userId: number;
  username: string | null;
  body: ProfileBody | null;
}

/** The cells of a CSV line as the body of a PUT, or what is wrong with them. */
function lineBody(cells: Record<string, string>): ProfileBody | null | string {
  const kind = cells.profile ?? "";
  if (kind === "" || kind === "none") {
    const extra = CSV_COLUMNS.slice(3).find((column) => (cells[column] ?? "") !== "");
    return extra ? `a user without a profile has no ${extra}` : null;
  }
  const list = (column: string) => (cells[column] ?? "").split(/\s+/).filter(Boolean);
  const flag = (column: string) => {
    const value = (cells[column] ?? "").toLowerCase();
    return value === "" ? undefined : value === "true" ? true : value === "false" ? false : value;
  };
  const raw = kind === "admin" ? { profile: kind, ...extras(cells) } : {
    profile: kind,
    queueIds: list("queue_ids").map((id) => CANONICAL_ID.test(id) ? Number(id) : id),
    groupIds: list("group_ids").map((id) => CANONICAL_ID.test(id) ? Number(id) : id),
    incalls: list("incalls"),
    recording: flag("recording"),
    listen: flag("listen"),
    changeQueues: flag("change_queues"),
  };
  const result = profileBody.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const column: Record<string, string> = {
    queueIds: "queue_ids",
    groupIds: "group_ids",
    changeQueues: "change_queues",
  };
  const field = String(issue.path[0] ?? "profile");
  return `column ${column[field] ?? field}: ${issue.message}`;
}

/** An admin line's non-empty cells beyond the profile (refused: an admin covers everything). */
function extras(cells: Record<string, string>): Record<string, string> {
  const names: Record<string, string> = {
    queue_ids: "queueIds",
    group_ids: "groupIds",
    incalls: "incalls",
    recording: "recording",
    listen: "listen",
    change_queues: "changeQueues",
  };
  return Object.fromEntries(
    CSV_COLUMNS.slice(3).filter((column) => (cells[column] ?? "") !== "").map((
      column,
    ) => [names[column]!, cells[column]!]),
  );
}

/** Reads an import: the file refused whole (400) when it is not a table of profiles. */
async function readImport(text: string): Promise<{ lines: ImportLine[]; errors: string[] }> {
  if (!text.trim()) throw invalid("the file is empty");
  const { header, rows } = await parseCsv(text);
  const columns = header.map((name) => name.toLowerCase());
  for (const [i, name] of columns.entries()) {
    if (!(CSV_COLUMNS as readonly string[]).includes(name)) {
      throw invalid(`unknown column ${JSON.stringify(header[i])} (${CSV_COLUMNS.join(", ")})`);
    }
    if (columns.indexOf(name) !== i) throw invalid(`column ${name} appears more than once`);
  }
  if (!columns.includes("user_id") || !columns.includes("profile")) {
    throw invalid("the file needs the columns user_id and profile (line 1 names the columns)");
  }
  if (rows.length > MAX_IMPORT_LINES) {
    throw invalid(`the file has more than ${MAX_IMPORT_LINES} lines of profiles`);
  }
  const lines: ImportLine[] = [];
  const errors: string[] = [];
  const seen = new Set<number>();
  for (const { line, fields } of rows) {
    if (fields.length !== columns.length) {
      errors.push(`line ${line}: ${columns.length} cells expected, ${fields.length} found`);
      continue;
    }
    const cells = Object.fromEntries(
      columns.map((name, i) => [name, unneutraliseCell(fields[i]!.trim()).trim()]),
    );
    const id = cells.user_id!;
    if (!CANONICAL_ID.test(id)) {
      errors.push(`line ${line}: user_id ${JSON.stringify(id)} is no user id`);
      continue;
    }
    if (seen.has(Number(id))) {
      errors.push(`line ${line}: user ${id} appears on an earlier line`);
      continue;
    }
    seen.add(Number(id));
    const body = lineBody(cells);
    if (typeof body === "string") errors.push(`line ${line}: ${body}`);
    else {
      lines.push({
        line,
        userId: Number(id),
        username: columns.includes("username") ? cells.username! : null,
        body,
      });
    }
  }
  return { lines, errors };
}

/** The first problems of an import, in one message. */
const importRefused = (errors: string[]) =>
  invalid(
    `nothing imported: ${errors.slice(0, 10).join("; ")}${
      errors.length > 10 ? `; and ${errors.length - 10} more` : ""
    }`,
  );

export function rightsRoutes(services: Services): Hono<AppEnv> {
  const { store } = services;
  const acl = (template: string) =>
    requireRights(services, `svc.rest.rights.profiles.${template}`, { admin: true });
  const notFound = { 404: "`UserNotFound`, `ProfileNotFound`" };

  /** Every profile with its user's username; those whose user is gone are left out. */
  async function everyProfile() {
    const [profiles, userList] = await Promise.all([listProfiles(store), users.all(store)]);
    const usernames = new Map(userList.map((user) => [user.id, user.username]));
    return profiles.filter((profile) => usernames.has(profile.id)).map((profile) => ({
      profile,
      username: usernames.get(profile.id) ?? null,
    }));
  }

  return new Hono<AppEnv>()
    .get(
      "/rights/profiles",
      acl("read"),
      operation(() => ({
        summary: "Every CTI user's rights profile (JSON, or CSV by `Accept`)",
        headers: { Accept: "`text/csv` for CSV (cells neutralised against formulas), else JSON" },
        responses: {
          200: { content: { "application/json": z.array(profileView), "text/csv": null } },
        },
      }), async (c) => {
        const all = await everyProfile();
        if (!wantsCsv(c)) {
          return c.json(all.map(({ profile, username }) => view(profile, username)));
        }
        const rows = all.map(({ profile, username }) => csvRow(profile, username));
        return c.body(toCsv(CSV_COLUMNS, rows), 200, { "Content-Type": "text/csv; charset=utf-8" });
      }),
    )
    .post(
      "/rights/profiles/import",
      acl("update"),
      operation(() => ({
        summary: "Sets the profiles a CSV file lists (the export's columns), all or none",
        body: { content: { "text/csv": null }, required: true },
        responses: { 200: z.object({ updated: z.int(), deleted: z.int() }) },
        errors: {
          400: "`InvalidProfile`: not a table of profiles, or a line wrong (each is named)",
        },
      }), async (c) => {
        let text: string;
        try {
          text = new TextDecoder("utf-8", { fatal: true }).decode(await c.req.arrayBuffer());
        } catch {
          throw invalid("the file is not valid UTF-8");
        }
        const { lines, errors } = await readImport(text);
        if (errors.length) throw importRefused(errors);
        const outcome = await transact(store, async (tx) => {
          // read in `tx` (their version keys checked at commit): a change meanwhile runs it again
          const userById = new Map((await tx.all(users)).map((user) => [user.id, user]));
          const had = new Set((await tx.all(rightsProfiles)).map((profile) => profile.id));
          const problems: string[] = [];
          let updated = 0;
          let deleted = 0;
          for (const { line, userId, username, body } of lines) {
            const user = userById.get(userId) ?? null;
            if (username !== null && user && username !== (user.username ?? "")) {
              problems.push(`line ${line}: user ${userId} is ${user.username}, not ${username}`);
              continue;
            }
            if (body === null) {
              if (!user) problems.push(`line ${line}: user ${userId} does not exist`);
              else if (had.has(userId)) {
                tx.remove(rightsProfiles, userId);
                deleted++;
              }
              continue;
            }
            const record = recordOf(userId, body);
            const wrong = await problem(tx, user, record);
            if (wrong) problems.push(`line ${line}: ${wrong}`);
            else {
              tx.put(rightsProfiles, record);
              updated++;
            }
          }
          if (problems.length) throw importRefused(problems);
          return { updated, deleted };
        });
        await announceProfiles(services, lines.map((line) => line.userId));
        return c.json(outcome);
      }),
    )
    .get(
      "/rights/profiles/:userId",
      acl("{userId}.read"),
      operation(() => ({
        summary: "A CTI user's rights profile",
        responses: { 200: profileView },
        errors: notFound,
      }), async (c) => {
        const userId = pathUserId(c);
        const user = await getUser(store, userId);
        if (!user) throw userNotFound(String(userId));
        const profile = await profileOf(store, userId);
        if (!profile) throw profileNotFound(userId);
        return c.json(view(profile, user.username));
      }),
    )
    .put(
      "/rights/profiles/:userId",
      acl("{userId}.update"),
      operation(() => ({
        summary: "Gives a CTI user a rights profile, replacing the one it had",
        body: profileBody,
        responses: { 200: profileView },
        errors: {
          400: "`InvalidProfile`: no body, not JSON, not the model, a queue or group that does " +
            "not exist, a user without a username",
          404: "`UserNotFound`",
        },
      }), async (c) => {
        const userId = pathUserId(c);
        const body = await readBody(c, profileBody, {
          missing: "InvalidProfile",
          invalid: "InvalidProfile",
        });
        const record = recordOf(userId, body);
        const user = await transact(store, async (tx) => {
          const user = await tx.get(users, userId);
          if (!user) throw userNotFound(String(userId));
          const wrong = await problem(tx, user, record);
          if (wrong) throw invalid(wrong);
          tx.put(rightsProfiles, record);
          return user;
        });
        await announceProfiles(services, [userId]);
        return c.json(view(record, user.username));
      }),
    )
    .delete(
      "/rights/profiles/:userId",
      acl("{userId}.delete"),
      operation(() => ({
        summary: "Takes a CTI user's rights profile away: it supervises nothing",
        responses: { 204: null },
        errors: notFound,
      }), async (c) => {
        const userId = pathUserId(c);
        if (!await getUser(store, userId)) throw userNotFound(String(userId));
        if (!await deleteProfile(store, userId)) throw profileNotFound(userId);
        await announceProfiles(services, [userId]);
        return c.body(null, 204);
      }),
    );
}
