/**
 * The demo data set (`SVC_DEMO=true`), loaded into an empty store so that the README's examples
 * work as written: alice (1001, an administrator: her rights profile is `admin`), bob (1002, no
 * profile) and sam (1004, a supervisor of the queue `sales` only) with SIP lines, the queues
 * `sales` (3000, with the agent 8001) and `support` (3001), two call qualifications, a callback list
 * with requests, and a web service user.
 */
import { adminProfile, setProfile } from "./rights/profiles.ts";
import { createAgent } from "./store/agents.ts";
import { createCallQualification } from "./store/call_qualifications.ts";
import { createCallbackList } from "./store/callback_lists.ts";
import { createCallbackRequests, dayOf } from "./store/callback_requests.ts";
import { randomText, type SipEndpointRecord, sipEndpoints } from "./store/endpoints.ts";
import { type ExtensionRecord, extensions } from "./store/extensions.ts";
import {
  followMainUser,
  type LineRecord,
  lines,
  newLineName,
  newProvisioningCode,
} from "./store/lines.ts";
import { createQueue } from "./store/queues.ts";
import { transact } from "./store/records.ts";
import type { Services } from "./services.ts";
import type { Store } from "./store/store.ts";
import { buildUser, hasNoUsers, type NewUser, users } from "./store/users.ts";
import { createWebServiceUser, findWebServiceUserByLogin } from "./store/webservice_users.ts";

export const DEMO_USERS = [
  {
    firstname: "Alice",
    lastname: "Martin",
    username: "alice",
    password: "alice-demo",
    exten: "1001",
  },
  { firstname: "Bob", lastname: "Durand", username: "bob", password: "bob-demo", exten: "1002" },
  { firstname: "Sam", lastname: "Lead", username: "sam", password: "sam-demo", exten: "1004" },
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
    "svc.rest.metrics.read",
    "svc.rest.supervision.#",
    "svc.rest.presences.#",
    "svc.rest.rights.#",
    "confd.#",
    "agentd.#",
  ],
};

/** The requests of the demo callback list "Sales callbacks", all due on the day of the load. */
export const DEMO_CALLBACK_REQUESTS = [
  {
    phoneNumber: "0612345678",
    mobilePhoneNumber: "",
    firstName: "Carol",
    lastName: "Petit",
    company: "Petit SARL",
    description: "Wants a quote for 20 seats",
  },
  {
    phoneNumber: "",
    mobilePhoneNumber: "+33 7 98 76 54 32",
    firstName: "Dan",
    lastName: "Moreau",
    company: "",
    description: "Call back on the mobile",
  },
  {
    phoneNumber: "0145678900",
    mobilePhoneNumber: "0698765432",
    firstName: "Eve",
    lastName: "Laurent",
    company: "Laurent & Fils",
    description: "Renewal of the support contract",
  },
];

/** Creates a user with a SIP line holding `exten` in `default`, all in one transaction. */
async function createUserWithLine(store: Store, input: NewUser, exten: string) {
  const [userId, lineId, sipId, extensionId] = [
    await users.nextId(store),
    await lines.nextId(store),
    await sipEndpoints.nextId(store),
    await extensions.nextId(store),
  ];
  const user = { ...await buildUser(userId, input), line_ids: [lineId] };
  // the line's caller id follows its user, as one made through /1.1 does
  const line: LineRecord = followMainUser(
    {
      id: lineId,
      name: newLineName(),
      protocol: "sip",
      context: "default",
      position: 1,
      provisioning_code: newProvisioningCode(),
      caller_id_name: null,
      caller_id_num: null,
      device_id: null,
      endpoint: { type: "sip", id: sipId },
      extension_ids: [extensionId],
      user_ids: [userId],
    },
    user,
    exten,
  );
  const sip: SipEndpointRecord = {
    id: sipId,
    username: input.username ?? randomText(8),
    secret: randomText(16),
    type: "friend",
    host: "dynamic",
    options: [],
    line_id: lineId,
  };
  const extension: ExtensionRecord = {
    id: extensionId,
    exten,
    context: "default",
    enabled: true,
    line_id: lineId,
  };
  await transact(store, (tx) => {
    tx.put(users, user);
    tx.put(lines, line);
    tx.put(sipEndpoints, sip);
    tx.put(extensions, extension);
    return Promise.resolve();
  });
  return user;
}

/** Loads the demo records when the store holds no user yet; answers whether it did. */
export async function loadDemo({ store, clock }: Services): Promise<boolean> {
  if (!await hasNoUsers(store) || await findWebServiceUserByLogin(store, "demo-ws")) return false;
  const created = [];
  for (const { exten, ...user } of DEMO_USERS) {
    created.push(await createUserWithLine(store, user, exten));
  }
  const agent = await createAgent(store, {
    number: "8001",
    firstname: created[0]!.firstname,
    lastname: created[0]!.lastname,
  });
  const sales = await createQueue(store, {
    name: "sales",
    display_name: "Sales",
    number: "3000",
    members: [{ agent_id: agent.id, penalty: 0 }],
  });
  await createQueue(store, { name: "support", display_name: "Support", number: "3001" });
  // alice administers supervision, sam supervises sales alone (docs/supervision.md)
  await setProfile(store, adminProfile(created[0]!.id));
  await setProfile(store, {
    id: created[2]!.id,
    profile: "supervisor",
    queue_ids: [sales.id],
    group_ids: [],
    incalls: [],
    recording: false,
    listen: false,
    change_queues: true,
  });
  await createCallQualification(store, {
    name: "Sale",
    sub_qualifications: [{ name: "Order placed" }, { name: "Quote sent" }],
    queue_ids: [sales.id],
  });
  await createCallQualification(store, {
    name: "No sale",
    sub_qualifications: [{ name: "Not interested" }, { name: "Call back later" }],
    queue_ids: [sales.id],
  });
  const callbacks = await createCallbackList(store, {
    name: "Sales callbacks",
    queue_id: sales.id,
  });
  const today = dayOf(clock.now());
  await createCallbackRequests(
    store,
    callbacks,
    DEMO_CALLBACK_REQUESTS.map((request, i) => ({
      ...request,
      dueDate: today,
      period: "All day",
      line: i + 2,
    })),
    clock.now(),
  );
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
    `  extensions: ${DEMO_USERS.map((user) => `${user.username} ${user.exten}`).join(", ")}`,
    "  rights profiles: alice admin, sam supervisor of sales; bob none",
    "  queues sales (3000) with agent 8001, support (3001); call qualifications; callback list " +
    `"Sales callbacks" with ${DEMO_CALLBACK_REQUESTS.length} requests`,
  ].join("\n");
}
