/**
 * The demo data set (`SVC_DEMO=true`), loaded into an empty store so that the README's examples
 * work as written. Later areas add their records here.
 */
import type { Services } from "./services.ts";
import { createUser, hasNoUsers } from "./store/users.ts";
import { createWebServiceUser, findWebServiceUserByLogin } from "./store/webservice_users.ts";

export const DEMO_USERS = [
  { firstname: "Alice", lastname: "Martin", username: "alice", password: "alice-demo" },
  { firstname: "Bob", lastname: "Durand", username: "bob", password: "bob-demo" },
] as const;

export const DEMO_WEBSERVICE_USER = {
  login: "demo-ws",
  password: "demo-ws-secret",
  name: "Demo integration",
  acls: [
    "svc.rest.dial.#",
    "svc.rest.dnd.#",
    "svc.rest.forward.#",
    "svc.rest.history.#",
    "svc.rest.callback_lists.#",
    "svc.rest.call_qualification.#",
    "svc.rest.events.#",
    "svc.rest.sim.#",
  ],
};

/** Loads the demo records when the store holds no user yet; answers whether it did. */
export async function loadDemo({ store }: Services): Promise<boolean> {
  if (!await hasNoUsers(store) || await findWebServiceUserByLogin(store, "demo-ws")) return false;
  for (const user of DEMO_USERS) await createUser(store, user);
  await createWebServiceUser(store, DEMO_WEBSERVICE_USER);
  return true;
}

/** The lines `deno task demo` prints at start. */
export function demoBanner(baseUrl: string): string {
  return [
    "svc demo is running on " + baseUrl,
    "  CTI users (POST /svc/api/2.0/auth/login):",
    ...DEMO_USERS.map((user) => `    ${user.username} / ${user.password}`),
    "  web service user (POST /svc/api/2.0/auth/webservice):",
    `    ${DEMO_WEBSERVICE_USER.login} / ${DEMO_WEBSERVICE_USER.password}`,
  ].join("\n");
}
