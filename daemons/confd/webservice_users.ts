/**
 * `/1.1/webservice_users`: the technical users who log in on `/svc/api/2.0/auth/webservice` with
 * their ACLs. `password` is write-only and stored hashed; a PUT with a password changes it.
 */
import * as z from "zod";
import type { Services } from "../../lib/services.ts";
import { hashPassword } from "../../lib/auth/passwords.ts";
import {
  buildWebServiceUser,
  type WebServiceUserRecord,
  webServiceUsers,
} from "../../lib/store/webservice_users.ts";
import { check, fields } from "./body.ts";
import { type Resource, resourceRoutes } from "./crud.ts";

export type WebServiceUserView = Omit<WebServiceUserRecord, "password_hash">;

/** A web service user's body (a function: the schemas below build it on first use). */
const userObject = () =>
  z.object({
    login: fields.name(64).regex(/^[a-zA-Z0-9._@-]+$/, "Must be letters, digits, ., _, @ or -."),
    password: fields.name(128),
    name: fields.name(128).optional(),
    acls: z.array(
      fields.name(256).regex(/^\S+$/, "Must not contain white space."),
    ).max(1000, "More than 1000 ACLs.").optional(),
  });

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const createSchema = z.lazy(userObject);
const updateSchema = z.lazy(() => userObject().partial());

export const webServiceUserResource: Resource<WebServiceUserRecord, WebServiceUserView> = {
  path: "/webservice_users",
  label: "WebServiceUser",
  collection: webServiceUsers,
  view: ({ password_hash: _, ...user }) => user,
  fields: ["id", "name", "login"],
  search: ["name", "login"],
  create(_tx, body, id) {
    const input = check(createSchema, body);
    return buildWebServiceUser(id, { ...input, acls: input.acls ?? [] });
  },
  async update(_tx, current, body) {
    const { password, ...input } = check(updateSchema, body);
    const passwordHash = password === undefined
      ? current.password_hash
      : await hashPassword(password);
    return { ...current, ...input, password_hash: passwordHash };
  },
};

export function webServiceUserRoutes(services: Services) {
  return resourceRoutes(services, webServiceUserResource);
}
