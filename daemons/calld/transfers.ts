/**
 * The call daemon's transfers (docs/calls.md): blind and attended, started, read, completed and
 * cancelled, under `/transfers` for any call and `/users/me/transfers` for a user's own. A
 * transfer's id is its initiator's `call_id`.
 */
import { type Context, Hono } from "hono";
import * as z from "zod";
import { DEFAULT_TENANT_UUID } from "../../lib/agent_control.ts";
import { ownTransfer, transferOf, transferPeer } from "../../lib/calls/user_calls.ts";
import type { AppEnv } from "../../lib/http.ts";
import { operation } from "../../lib/openapi/operation.ts";
import type { Transfer } from "../../lib/platform/call_control.ts";
import type { Services } from "../../lib/services.ts";
import type { Store } from "../../lib/store/store.ts";
import { getUser } from "../../lib/store/users.ts";
import { readBody, TRANSFER_REQUEST, USER_TRANSFER_REQUEST } from "./body.ts";
import { type Answer, CalldError, invalidData, refused } from "./errors.ts";
import { calldAcl } from "./guard.ts";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
export const TRANSFER = z.lazy(() =>
  z.object({
    id: z.string(),
    initiator_uuid: z.string(),
    initiator_tenant_uuid: z.string(),
    transferred_call: z.string(),
    initiator_call: z.string(),
    recipient_call: z.string().nullable(),
    status: z.enum(["ringback", "answered", "blind_transferred"]),
    flow: z.enum(["attended", "blind"]),
  })
);

/** A transfer that cannot start: which party, in wazo-calld's words. */
const CREATION: Record<string, Answer> = {
  no_call: [400, "transfer-creation-error", "Transfer creation error"],
  not_talking: [400, "transfer-creation-error", "Transfer creation error"],
  in_conference: [400, "transfer-creation-error", "Transfer creation error"],
};

const CREATION_ERRORS = {
  400: "`invalid-data`, or `transfer-creation-error` (a party not found, not talking, not the " +
    "initiator's peer, in a conference)",
  409: "`transfer-already-started`: the initiator (or a party) already transfers",
};

async function transferView(store: Store, transfer: Transfer) {
  const user = await getUser(store, transfer.initiatorUserId);
  return {
    id: transfer.id,
    initiator_uuid: user?.uuid ?? "",
    initiator_tenant_uuid: DEFAULT_TENANT_UUID,
    transferred_call: transfer.transferredCallId,
    initiator_call: transfer.initiatorCallId,
    recipient_call: transfer.recipientCallId,
    status: transfer.status,
    flow: transfer.flow,
  };
}

const tokenUser = (c: Context<AppEnv>) => Number(c.get("identity").userId);

/** Seconds of a request as the platform's milliseconds (null: no limit). */
const timeoutMs = (timeout: number | null | undefined) => timeout == null ? null : timeout * 1000;

/** The extension as wazo-calld reads it: without blanks. */
const exten = (raw: string) => raw.split(/\s+/).join("");

export function transferRoutes(services: Services): Hono<AppEnv> {
  const { tokens, platform, store } = services;
  const app = new Hono<AppEnv>();
  const known = (id: string) => refused(() => transferOf(platform, id), { transfer_id: id });
  const own = (c: Context<AppEnv>, id: string) =>
    refused(() => ownTransfer(platform, tokenUser(c), id), { transfer_id: id });

  app.post(
    "/transfers",
    calldAcl(tokens, "calld.transfers.create"),
    operation(() => ({
      summary: "Transfers a call's peer to an extension, blind or attended",
      body: TRANSFER_REQUEST,
      responses: { 201: TRANSFER },
      errors: CREATION_ERRORS,
    }), async (c) => {
      const body = await readBody(c, TRANSFER_REQUEST);
      if (Object.keys(body.variables ?? {}).length) {
        throw invalidData({ variables: ["svc sets no variables on a transfer"] });
      }
      const transfer = await refused(
        () =>
          platform.startTransfer({
            flow: body.flow,
            initiatorCallId: body.initiator_call,
            transferredCallId: body.transferred_call,
            exten: exten(body.exten),
            context: body.context,
            timeoutMs: timeoutMs(body.timeout),
          }),
        { initiator_call: body.initiator_call },
        CREATION,
      );
      return c.json(await transferView(store, transfer), 201);
    }),
  );
  app.get(
    "/transfers/:transfer_id",
    calldAcl(tokens, "calld.transfers.{transfer_id}.read"),
    operation(
      () => ({
        summary: "A transfer in progress",
        responses: { 200: TRANSFER },
        errors: { 404: "`no-such-transfer`" },
      }),
      async (c) => c.json(await transferView(store, await known(c.req.param("transfer_id")!))),
    ),
  );
  app.put(
    "/transfers/:transfer_id/complete",
    calldAcl(tokens, "calld.transfers.{transfer_id}.complete.update"),
    operation(
      () => ({
        summary: "Completes an attended transfer",
        responses: { 204: null },
        errors: { 404: "`no-such-transfer`" },
      }),
      async (c) => {
        const { id } = await known(c.req.param("transfer_id")!);
        await refused(() => platform.completeTransfer(id), { transfer_id: id });
        return c.body(null, 204);
      },
    ),
  );
  app.delete(
    "/transfers/:transfer_id",
    calldAcl(tokens, "calld.transfers.{transfer_id}.delete"),
    operation(
      () => ({
        summary: "Cancels an attended transfer",
        responses: { 204: null },
        errors: { 404: "`no-such-transfer`" },
      }),
      async (c) => {
        const { id } = await known(c.req.param("transfer_id")!);
        await refused(() => platform.cancelTransfer(id), { transfer_id: id });
        return c.body(null, 204);
      },
    ),
  );

  const me = { me: true };
  app.get(
    "/users/me/transfers",
    calldAcl(tokens, "calld.users.me.transfers.read", me),
    operation(() => ({
      summary: "The user's transfers in progress",
      responses: { 200: z.object({ items: z.array(TRANSFER) }) },
    }), async (c) => {
      const userId = tokenUser(c);
      const mine = (await platform.transfers()).filter((t) => t.initiatorUserId === userId);
      return c.json({ items: await Promise.all(mine.map((t) => transferView(store, t))) });
    }),
  );
  app.post(
    "/users/me/transfers",
    calldAcl(tokens, "calld.users.me.transfers.create", me),
    operation(() => ({
      summary: "Transfers the peer of one of the user's calls to an extension of its context",
      body: USER_TRANSFER_REQUEST,
      responses: { 201: TRANSFER },
      errors: { ...CREATION_ERRORS, 403: "`user-permission-denied`: another user's call" },
    }), async (c) => {
      const body = await readBody(c, USER_TRANSFER_REQUEST);
      const user = await getUser(store, tokenUser(c));
      if (!user) throw new CalldError(400, "invalid-user", "Invalid user: not found");
      const transfer = await refused(
        () =>
          transferPeer(platform, store, user, {
            initiatorCallId: body.initiator_call,
            exten: exten(body.exten),
            flow: body.flow,
            timeoutMs: timeoutMs(body.timeout),
          }),
        { initiator_call: body.initiator_call },
        CREATION,
      );
      return c.json(await transferView(store, transfer), 201);
    }),
  );
  app.put(
    "/users/me/transfers/:transfer_id/complete",
    calldAcl(tokens, "calld.users.me.transfers.{transfer_id}.complete.update", me),
    operation(() => ({
      summary: "Completes one of the user's attended transfers",
      responses: { 204: null },
      errors: { 403: "`user-permission-denied`", 404: "`no-such-transfer`" },
    }), async (c) => {
      const { id } = await own(c, c.req.param("transfer_id")!);
      await refused(() => platform.completeTransfer(id), { transfer_id: id });
      return c.body(null, 204);
    }),
  );
  app.delete(
    "/users/me/transfers/:transfer_id",
    calldAcl(tokens, "calld.users.me.transfers.{transfer_id}.delete", me),
    operation(() => ({
      summary: "Cancels one of the user's attended transfers",
      responses: { 204: null },
      errors: { 403: "`user-permission-denied`", 404: "`no-such-transfer`" },
    }), async (c) => {
      const { id } = await own(c, c.req.param("transfer_id")!);
      await refused(() => platform.cancelTransfer(id), { transfer_id: id });
      return c.body(null, 204);
    }),
  );
  return app;
}
