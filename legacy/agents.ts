/**
 * The 1.0 agent routes (spec "States and transitions", decisions §9). They name agents by the
 * phone (extension) they are logged on, always in the context {@link AGENT_CONTEXT}; each answers
 * 200 `{"res":"success"}`.
 *
 * - `POST agentLogin/` `{agentphonenumber, agentnumber}`: logs agent `agentnumber` on the line
 *   holding extension `agentphonenumber`. It takes the line over: the agent logged there (if any)
 *   is logged out first, and so is this agent from any other line it is logged on, so the events
 *   are `AgentLoggedOut` (this agent's old line), `AgentLoggedOut` (the other agent), then
 *   `AgentReady`. An agent already logged on that very phone stays as it is (nothing changes, no
 *   event). 400 `AgentNotFound` for an unknown agent number, 400 `ExtensionNotFound` when no line
 *   holds the extension (nobody is logged out then).
 * - `POST agentLogout/` `{phoneNumber}`: logs out the agent logged on that phone.
 * - `POST togglePause/` `{phoneNumber}`: ready → paused; paused → ready; wrap-up → ready (the
 *   wrap-up ends at once); ringing or on a call → paused (the agent shows `AgentOnPause` when the
 *   call, and its wrap-up, ends). A pause from here has no reason.
 *
 * `agentLogout` and `togglePause` answer 400 `AgentNotLoggedIn` when no agent is logged on that
 * phone. Bodies: 400 `JsonBodyNotFound` without one, `JsonErrorDecoding` for one that is not JSON or
 * not the model (every field a string of at most 128 characters). Two requests racing for the same
 * line or agent may leave the platform refusing the login: 409 `Conflict` with its reason.
 */
import { Hono } from "hono";
import * as z from "zod";
import { agentLoggedOn } from "../lib/agent_control.ts";
import { SERVICE_BODY, SUCCESS } from "../lib/control.ts";
import { ApiError } from "../lib/errors.ts";
import { type AppEnv, readBody } from "../lib/http.ts";
import { bodyObject, required } from "../lib/body_schema.ts";
import { PlatformRefusal } from "../lib/platform/port.ts";
import type { Services } from "../lib/services.ts";
import { findAgentByNumber } from "../lib/store/agents.ts";
import { findExtension } from "../lib/store/extensions.ts";
import { both } from "./common.ts";

/** The context of every 1.0 agent phone: the internal context created at start-up. */
export const AGENT_CONTEXT = "default";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const field = () => z.string(required("a string")).max(128, "longer than 128 characters");
const loginSchema = z.lazy(() => bodyObject({ agentphonenumber: field(), agentnumber: field() }));
const phoneSchema = z.lazy(() => bodyObject({ phoneNumber: field() }));

const notLoggedIn = (phone: string) =>
  new ApiError(400, "AgentNotLoggedIn", `no agent is logged on phone ${phone}`);
const extensionNotFound = (phone: string) =>
  new ApiError(400, "ExtensionNotFound", `no line holds extension ${phone} in ${AGENT_CONTEXT}`);

/** Runs a platform command, answering its refusal in the 1.0 form. */
async function command(phone: string, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    if (!(error instanceof PlatformRefusal)) throw error;
    if (error.reason === "not_logged") throw notLoggedIn(phone);
    if (error.reason === "no_extension") throw extensionNotFound(phone);
    throw new ApiError(409, "Conflict", error.message);
  }
}

export function agentRoutes(services: Services): Hono<AppEnv> {
  const { store, platform } = services;

  /** The agent logged on `phone`, or 400 `AgentNotLoggedIn`. */
  async function agentOn(phone: string) {
    const found = await agentLoggedOn(services, phone, AGENT_CONTEXT);
    if (!found) throw notLoggedIn(phone);
    return found;
  }

  return new Hono<AppEnv>()
    .on("POST", both("/agentLogin"), async (c) => {
      const { agentphonenumber: phone, agentnumber } = await readBody(c, loginSchema, SERVICE_BODY);
      const agent = await findAgentByNumber(store, agentnumber);
      if (!agent) throw new ApiError(400, "AgentNotFound", `no agent ${agentnumber}`);
      if ((await findExtension(store, phone, AGENT_CONTEXT))?.line_id == null) {
        throw extensionNotFound(phone);
      }
      const presence = await platform.agentPresence(agent.id);
      if (presence.logged && presence.extension === phone && presence.context === AGENT_CONTEXT) {
        return c.json(SUCCESS);
      }
      const occupant = await agentLoggedOn(services, phone, AGENT_CONTEXT);
      if (presence.logged) await command(phone, () => platform.agentLogout(agent.id));
      if (occupant) await command(phone, () => platform.agentLogout(occupant.agent.id));
      await command(phone, () => platform.agentLogin(agent, phone, AGENT_CONTEXT));
      return c.json(SUCCESS);
    })
    .on("POST", both("/agentLogout"), async (c) => {
      const { phoneNumber } = await readBody(c, phoneSchema, SERVICE_BODY);
      const { agent } = await agentOn(phoneNumber);
      await command(phoneNumber, () => platform.agentLogout(agent.id));
      return c.json(SUCCESS);
    })
    .on("POST", both("/togglePause"), async (c) => {
      const { phoneNumber } = await readBody(c, phoneSchema, SERVICE_BODY);
      const { agent, status } = await agentOn(phoneNumber);
      const resume = status.paused || status.state === "AgentOnWrapup";
      await command(
        phoneNumber,
        () => resume ? platform.agentUnpause(agent.id) : platform.agentPause(agent.id, null),
      );
      return c.json(SUCCESS);
    });
}
