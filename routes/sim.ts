/**
 * The simulated PBX's control API (decisions §8), so that every scenario can be played by hand:
 * list phones and calls, act on a phone's current call, set how a phone answers. docs/platform.md
 * tells how the simulator behaves.
 */
import { operation } from "../lib/openapi/operation.ts";
import { SUCCESS_BODY } from "../lib/control.ts";
import { Hono } from "hono";
import * as z from "zod";
import { requireAcl } from "../lib/auth/guard.ts";
import { ApiError } from "../lib/errors.ts";
import { type AppEnv, readJson } from "../lib/http.ts";
import { PlatformRefusal } from "../lib/platform/port.ts";
import {
  POLICY_NAMES,
  SIM_ACTIONS,
  type SimAction,
  type SimPlatform,
} from "../lib/platform/sim/mod.ts";
import type { Services } from "../lib/services.ts";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const milliseconds = () => z.number().int().min(0).max(86_400_000);

const policySchema = z.lazy(() =>
  z.strictObject({
    policy: z.enum(POLICY_NAMES as [string, ...string[]]),
    answer_ms: milliseconds().optional(),
    talk_ms: milliseconds().optional(),
  })
);

/** The simulator's refusals in the API's error form. */
function refusalError(error: unknown): unknown {
  if (!(error instanceof PlatformRefusal)) return error;
  if (error.reason === "no_call") return new ApiError(409, "NoCall", error.message);
  if (error.reason === "no_phone") return new ApiError(404, "PhoneNotFound", error.message);
  return new ApiError(400, "BadRequest", error.message);
}

/** Runs `fn`, answering the simulator's refusals as API errors. */
async function refusalsAnswered<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw refusalError(error);
  }
}

export function simRoutes(sim: SimPlatform, { tokens }: Services): Hono<AppEnv> {
  return new Hono<AppEnv>()
    .get(
      "/sim/phones",
      requireAcl(tokens, "svc.rest.sim.phones.read"),
      operation(() => ({
        summary: "The simulated phones and what each does",
        responses: { 200: z.array(z.looseObject({ extension: z.string() })) },
      }), async (c) => c.json(await sim.phones())),
    )
    .get(
      "/sim/calls",
      requireAcl(tokens, "svc.rest.sim.calls.read"),
      operation(() => ({
        summary: "The simulated calls in progress",
        responses: { 200: z.array(z.looseObject({})) },
      }), (c) => c.json(sim.calls())),
    )
    .post(
      `/sim/phones/:extension/:action{${SIM_ACTIONS.join("|")}}`,
      requireAcl(tokens, "svc.rest.sim.phones.{extension}.{action}.create"),
      operation(() => ({
        summary: "Acts on a simulated phone as its user would",
        responses: { 200: SUCCESS_BODY },
        errors: { 404: "`PhoneNotFound`", 409: "`NoCall`: nothing to act on" },
      }), async (c) => {
        const extension = c.req.param("extension") ?? "";
        const action = c.req.param("action") as SimAction;
        await refusalsAnswered(() => sim.act(extension, action));
        return c.json({ res: "success" });
      }),
    )
    .put(
      "/sim/phones/:extension/policy",
      requireAcl(tokens, "svc.rest.sim.phones.{extension}.policy.update"),
      operation(() => ({
        summary: "How a simulated phone answers its calls",
        body: policySchema,
        responses: {
          200: z.looseObject({ extension: z.string(), policy: z.string() }),
        },
        errors: { 400: "`BadRequest`", 404: "`PhoneNotFound`" },
      }), async (c) => {
        const extension = c.req.param("extension") ?? "";
        const body = await readJson(c, policySchema, "BadRequest");
        const policy = await refusalsAnswered(() =>
          sim.setPolicy(extension, body as Parameters<typeof sim.setPolicy>[1])
        );
        return c.json({ extension, ...policy });
      }),
    );
}
