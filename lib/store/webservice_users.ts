/**
 * Web service users: technical users with custom ACLs who log in on
 * `/svc/api/2.0/auth/webservice`. The configuration daemon exposes them as `/1.1/webservice_users`.
 */
import { hashPassword } from "../auth/passwords.ts";
import { Collection, transact, UniqueConflict } from "./records.ts";
import type { Store } from "./store.ts";

export interface WebServiceUserRecord {
  id: number;
  login: string;
  name: string;
  acls: string[];
  password_hash: string;
}

export interface NewWebServiceUser {
  login: string;
  name?: string;
  password: string;
  acls: string[];
}

export const webServiceUsers = new Collection<WebServiceUserRecord>("webservice_users", {
  login: (user) => user.login,
});

/**
 * Creates a web service user; throws `UniqueConflict` when the login is taken.
 *
 * @example
 * await createWebServiceUser(store, { login: "crm", password: "pw", acls: ["svc.rest.dial.#"] });
 */
export async function createWebServiceUser(
  store: Store,
  input: NewWebServiceUser,
): Promise<WebServiceUserRecord> {
  const id = await webServiceUsers.nextId(store);
  return await webServiceUsers.put(store, await buildWebServiceUser(id, input));
}

/** A complete record: the password hashed, the name the login when not given. */
export async function buildWebServiceUser(
  id: number,
  input: NewWebServiceUser,
): Promise<WebServiceUserRecord> {
  return {
    id,
    login: input.login,
    name: input.name ?? input.login,
    acls: input.acls,
    password_hash: await hashPassword(input.password),
  };
}

export const getWebServiceUser = (store: Store, id: number) => webServiceUsers.get(store, id);
export const findWebServiceUserByLogin = (store: Store, login: string) =>
  webServiceUsers.findBy(store, "login", login);

/** True when the store holds at least one web service user. */
export async function hasWebServiceUsers(store: Store): Promise<boolean> {
  return (await store.list({ prefix: [webServiceUsers.name] }, { limit: 1 })).length > 0;
}

/**
 * Creates the administrator of `SVC_ADMIN_LOGIN` with ACL `#`, or resets its password and ACLs
 * when it exists.
 */
export async function ensureAdmin(store: Store, login: string, password: string) {
  const passwordHash = await hashPassword(password);
  for (;;) {
    const known = await findWebServiceUserByLogin(store, login);
    const id = known?.id ?? await webServiceUsers.nextId(store);
    try {
      return await transact(store, async (tx) => {
        const existing = await tx.findBy(webServiceUsers, "login", login);
        const admin = {
          id,
          login,
          name: login,
          ...existing,
          acls: ["#"],
          password_hash: passwordHash,
        };
        tx.put(webServiceUsers, admin);
        return admin;
      });
    } catch (error) {
      if (!(error instanceof UniqueConflict)) throw error; // else another process created it: again
    }
  }
}
