/**
 * Web service users: technical users with custom ACLs who log in on
 * `/svc/api/2.0/auth/webservice`. The configuration daemon exposes them as `/1.1/webservice_users`.
 */
import { hashPassword } from "../auth/passwords.ts";
import { getByIndex, nextId, UniqueConflict, writeRecord } from "./records.ts";
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

export const webServiceUserKey = (id: number) => ["webservice_users", id] as const;
export const webServiceUserByLoginKey = (login: string) =>
  ["webservice_users_by_login", login] as const;

/**
 * Creates a web service user; throws {@link UniqueConflict} when the login is taken.
 *
 * @example
 * await createWebServiceUser(store, { login: "crm", password: "pw", acls: ["svc.rest.dial.#"] });
 */
export async function createWebServiceUser(
  store: Store,
  input: NewWebServiceUser,
): Promise<WebServiceUserRecord> {
  const user: WebServiceUserRecord = {
    id: await nextId(store, "webservice_users"),
    login: input.login,
    name: input.name ?? input.login,
    acls: input.acls,
    password_hash: await hashPassword(input.password),
  };
  const result = await writeRecord(store, {
    key: webServiceUserKey(user.id),
    value: user,
    indexes: [webServiceUserByLoginKey(user.login)],
  });
  if (!result.ok) throw new UniqueConflict("login", user.login);
  return user;
}

export async function getWebServiceUser(store: Store, id: number) {
  return (await store.get<WebServiceUserRecord>(webServiceUserKey(id))).value;
}

export async function findWebServiceUserByLogin(store: Store, login: string) {
  return (await getByIndex<WebServiceUserRecord>(store, webServiceUserByLoginKey(login)))?.value ??
    null;
}

/**
 * Creates the administrator of `SVC_ADMIN_LOGIN` with ACL `#`, or resets its password and ACLs
 * when it exists.
 */
export async function ensureAdmin(store: Store, login: string, password: string) {
  for (;;) {
    const existing = await getByIndex<WebServiceUserRecord>(
      store,
      webServiceUserByLoginKey(login),
    );
    if (!existing?.value) {
      try {
        return await createWebServiceUser(store, { login, password, acls: ["#"], name: login });
      } catch (error) {
        if (error instanceof UniqueConflict) continue; // another process created it meanwhile
        throw error;
      }
    }
    const user = { ...existing.value, acls: ["#"], password_hash: await hashPassword(password) };
    const indexes = [webServiceUserByLoginKey(login)];
    const result = await writeRecord(store, {
      key: webServiceUserKey(user.id),
      value: user,
      indexes,
      previous: { versionstamp: existing.versionstamp!, indexes },
    });
    if (result.ok) return user;
  }
}
