/**
 * Dial commands (decisions §5) as the 2.0 routes (`routes/dial.ts`) and the deprecated 1.0 routes
 * (`legacy/dial.ts`) run them: the body fields, their limits, and each command checked against its
 * body first (a {@link DialCommand}), then run for the path user once that user is known.
 *
 * Every refusal is 400 `BadRequest` with a message naming the problem (the spec's errors 6).
 *
 * Limits (beyond the spec, so that what reaches a PBX stays sane): a destination is at most 256
 * characters as sent and 64 once sanitized; `variables` is a flat object of at most 32 entries,
 * each key 1 to 64 letters, digits or `_` (it becomes `USR_<key>`, a key already starting with
 * `USR_` is kept, so `a` and `USR_a` together are refused), each value a string of at most 1024
 * characters without control characters (line breaks would break a PBX manager protocol); caller
 * id name and number at most 80 characters, no control characters, blank meaning none.
 */
import type { Context } from "hono";
import * as z from "zod";
import { SUCCESS } from "./control.ts";
import { ApiError } from "./errors.ts";
import { type AppEnv, checkBody, readBody } from "./http.ts";
import { bodyObject, required } from "./body_schema.ts";
import { sanitizeNumber } from "./phone_numbers.ts";
import { type CallStarted, type CallVariables, PlatformRefusal } from "./platform/port.ts";
import type { CoreServices } from "./core_services.ts";
import { isConnected } from "./store/connections.ts";
import { getQueue, type QueueRecord } from "./store/queues.ts";
import { findUserByUsername, type UserRecord } from "./store/users.ts";

/** Every body problem of a dial command is a `BadRequest` (the spec's errors 6). */
export const DIAL_BODY = { missing: "BadRequest", invalid: "BadRequest" };

export const MAX_DESTINATION_LENGTH = 256;
export const MAX_NUMBER_LENGTH = 64;
export const MAX_VARIABLES = 32;
export const MAX_VARIABLE_LENGTH = 1024;
export const MAX_CALLER_ID_LENGTH = 80;
const VARIABLE_KEY = /^[A-Za-z0-9_]{1,64}$/;
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

export const badRequest = (message: string) => new ApiError(400, "BadRequest", message);

// the fields and bodies are built on first use (functions, `z.lazy`), not at every start
// (docs/performance.md)

/** A number to dial as sent (sanitized by {@link dialledNumber}). */
const destinationField = () =>
  z.string(required("a string")).max(
    MAX_DESTINATION_LENGTH,
    `longer than ${MAX_DESTINATION_LENGTH} characters`,
  );
/** Checked by {@link callVariables}, which words its own messages. */
const variablesField = () =>
  z.unknown().optional().meta({
    description: "Channel variables: an object of at most 32 strings, each key 1 to 64 " +
      "letters, digits or _",
  });
/** The user to call, by username. */
const usernameField = () => z.string(required("a string")).max(256);
const callerIdField = () =>
  z.string(required("a string")).max(
    MAX_CALLER_ID_LENGTH,
    `longer than ${MAX_CALLER_ID_LENGTH} characters`,
  ).refine((value) => !CONTROL.test(value), "control characters are not allowed").optional();

/** The bodies of a dial to a number, by the field naming the number (2.0 and 1.0). */
const numberSchemas = {
  destination: z.lazy(() =>
    bodyObject({ destination: destinationField(), variables: variablesField() })
  ),
  number: z.lazy(() => bodyObject({ number: destinationField(), variables: variablesField() })),
};

/** The body of a call to another user, the same in both APIs. */
const userSchema = z.lazy(() =>
  bodyObject({ username: usernameField(), variables: variablesField() })
);

/** The body of a dial from a queue, the same in both APIs. */
const fromQueueSchema = z.lazy(() =>
  bodyObject({
    destination: destinationField(),
    queueId: z.int(required("an integer")),
    callerIdName: callerIdField(),
    callerIdNumber: callerIdField(),
    variables: variablesField(),
  })
);

/** The body of a call to a queue (2.0 only). */
export const toQueueSchema = z.lazy(() =>
  bodyObject({
    destination: destinationField(),
    queueName: z.string(required("a string")).max(256),
    callerIdNumber: callerIdField(),
    variables: variablesField(),
  })
);

/** The bodies the dial routes read, by route: for the OpenAPI document. */
export const DIAL_SCHEMAS = {
  number: numberSchemas.destination,
  legacyNumber: numberSchemas.number,
  user: userSchema,
  fromQueue: fromQueueSchema,
  toQueue: toQueueSchema,
};

/** The number to dial; 400 naming the body's `field` when nothing dialable is left. */
export function dialledNumber(raw: string, field = "destination"): string {
  const number = sanitizeNumber(raw);
  if (!number) throw badRequest(`${field} ${JSON.stringify(raw)} holds no number to dial`);
  if (number.length > MAX_NUMBER_LENGTH) {
    throw badRequest(`${field} is longer than ${MAX_NUMBER_LENGTH} digits`);
  }
  return number;
}

/** The `variables` of a body (see the module's limits); absent is none. */
export function callVariables(raw: unknown): CallVariables {
  if (raw === undefined) return {};
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw badRequest("field variables: expected an object of strings");
  }
  const entries = Object.entries(raw);
  if (entries.length > MAX_VARIABLES) {
    throw badRequest(`field variables: more than ${MAX_VARIABLES} variables`);
  }
  const named = new Map<string, string>();
  for (const [key, value] of entries) {
    if (!VARIABLE_KEY.test(key)) {
      throw badRequest(
        `field variables: key ${JSON.stringify(key)} is not 1 to 64 letters, digits or _`,
      );
    }
    if (typeof value !== "string") {
      throw badRequest(`field variables.${key}: expected a string`);
    }
    if (value.length > MAX_VARIABLE_LENGTH || CONTROL.test(value)) {
      throw badRequest(
        `field variables.${key}: longer than ${MAX_VARIABLE_LENGTH} characters ` +
          "or holds control characters",
      );
    }
    const reported = key.startsWith("USR_") ? key : `USR_${key}`;
    const other = named.get(reported);
    if (other !== undefined) {
      throw badRequest(`field variables: ${other} and ${key} both name ${reported}`);
    }
    named.set(reported, key);
  }
  return Object.fromEntries(entries) as CallVariables;
}

/** A caller id text: trimmed, blank meaning none. */
const optionalText = (value: string | undefined) => value?.trim() || null;

/** Runs a platform command; its refusal is a `BadRequest` with its message. */
export async function platformCommand(
  command: () => Promise<CallStarted>,
): Promise<CallStarted> {
  try {
    return await command();
  } catch (error) {
    if (error instanceof PlatformRefusal) throw badRequest(error.message);
    throw error;
  }
}

/** The path user of a dial must have a line and be connected (decisions §2, §5). */
export async function readyToDial({ store, clock }: CoreServices, user: UserRecord): Promise<void> {
  if (!user.line_ids.length) throw badRequest(`user ${user.username} has no line`);
  if (!await isConnected(store, user.id, clock.now())) {
    throw badRequest(`user ${user.username} is not connected`);
  }
}

/**
 * A dial command whose body was checked: it runs for the path user (already found and checked by
 * {@link readyToDial}) and checks what the body names (callee, queue) as it runs.
 */
export type DialCommand = (services: CoreServices, user: UserRecord) => Promise<CallStarted>;

/** Dials a number from the user's phone; `field` names the number in messages. */
function numberCommand(raw: string, rawVariables: unknown, field: string): DialCommand {
  const number = dialledNumber(raw, field);
  const variables = callVariables(rawVariables);
  return ({ platform }, user) =>
    platformCommand(() => platform.dialNumber(user, number, variables));
}

/** Calls another user, who must exist and have a line, from the user's phone. */
function userCommand(body: z.infer<typeof userSchema>): DialCommand {
  const variables = callVariables(body.variables);
  return async (services, user) => {
    const callee = await findUserByUsername(services.store, body.username);
    if (!callee) throw badRequest(`user to call ${JSON.stringify(body.username)} not found`);
    if (!callee.line_ids.length) throw badRequest(`user to call ${body.username} has no line`);
    return await platformCommand(() => services.platform.dialUser(user, callee, variables));
  };
}

/** Dials `destination` from the queue `queueId` on behalf of the user. */
function fromQueueCommand(body: z.infer<typeof fromQueueSchema>): DialCommand {
  const number = dialledNumber(body.destination);
  const variables = callVariables(body.variables);
  const callerId = {
    name: optionalText(body.callerIdName),
    number: optionalText(body.callerIdNumber),
  };
  return async ({ store, platform }, user) => {
    const queue = knownQueue(await getQueue(store, body.queueId), `id ${body.queueId}`);
    return await platformCommand(() =>
      platform.dialFromQueue(user, queue, number, variables, callerId)
    );
  };
}

/** `queue`, or 400 naming what was looked for. */
export function knownQueue(queue: QueueRecord | null, named: string): QueueRecord {
  if (!queue) throw badRequest(`no queue ${named}`);
  return queue;
}

/**
 * Reads and checks a dial command's body (every problem a 400 `BadRequest`): `number` dials the
 * number in the body's `field` (`destination` in 2.0, `number` in 1.0), `user` calls the body's
 * `username`, `fromQueue` dials `destination` from the queue `queueId`.
 *
 * @example
 * const command = await readDial.number(c, "number");
 */
export const readDial = {
  async number(
    c: Context,
    field: keyof typeof numberSchemas = "destination",
  ): Promise<DialCommand> {
    const body = await readBody(c, numberSchemas[field], DIAL_BODY);
    return numberCommand("number" in body ? body.number : body.destination, body.variables, field);
  },
  user: async (c: Context): Promise<DialCommand> =>
    userCommand(await readBody(c, userSchema, DIAL_BODY)),
  fromQueue: async (c: Context): Promise<DialCommand> =>
    fromQueueCommand(await readBody(c, fromQueueSchema, DIAL_BODY)),
};

/**
 * The dial commands of a message already parsed (the CTI socket's `dial` and `dialFromQueue`):
 * the same fields, checks and errors as the 2.0 routes' bodies.
 */
export const dialOf = {
  number(body: unknown): DialCommand {
    const { destination, variables } = checkBody(numberSchemas.destination, body, "BadRequest");
    return numberCommand(destination, variables, "destination");
  },
  fromQueue: (body: unknown): DialCommand =>
    fromQueueCommand(checkBody(fromQueueSchema, body, "BadRequest")),
  /** The user's mobile number first, then `destination` (the user must have a mobile number). */
  fromMobile(body: unknown): DialCommand {
    const { destination, variables } = checkBody(numberSchemas.destination, body, "BadRequest");
    const number = dialledNumber(destination);
    const vars = callVariables(variables);
    return ({ platform }, user) => {
      const mobile = sanitizeNumber(user.mobile_phone_number ?? "");
      if (!mobile) {
        throw new ApiError(400, "NoMobileNumber", `user ${user.username} has no mobile number`);
      }
      return platformCommand(() => platform.dialFromMobile(user, mobile, number, vars));
    };
  },
};

/** Answers `{"res":"success"}`, logging the call a command of `route` started. */
export function dialStarted(
  c: Context<AppEnv>,
  { logger }: CoreServices,
  route: string,
  call: CallStarted,
): Response {
  logger.info("dial", { requestId: c.get("requestId"), route, linkedId: call.linkedId });
  return c.json(SUCCESS);
}

/**
 * Runs `command` for `user` (who must have a line and be connected: {@link readyToDial}) and
 * answers success: how every dial route but `toqueue` ends.
 */
export async function dialFor(
  c: Context<AppEnv>,
  services: CoreServices,
  route: string,
  user: UserRecord,
  command: DialCommand,
): Promise<Response> {
  await readyToDial(services, user);
  return dialStarted(c, services, route, await command(services, user));
}
