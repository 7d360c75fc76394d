/**
 * The first-run wizard (`/1.1/wizard`): it creates the `admin` web service user and records the
 * settings it was given. The store counts as configured once the wizard has run, or as soon as
 * any web service user exists (e.g. from `SVC_ADMIN_LOGIN`): the wizard takes no token, so it must
 * never be able to hand out an administrator on a store someone already administers.
 */
import { hashPassword } from "../auth/passwords.ts";
import { Collection, transact } from "./records.ts";
import type { Store } from "./store.ts";
import { hasWebServiceUsers, webServiceUsers } from "./webservice_users.ts";

/** The login of the web service user the wizard creates. */
export const WIZARD_ADMIN_LOGIN = "admin";

export interface WizardNetwork {
  hostname: string;
  domain: string;
  interface: string | null;
  ip_address: string | null;
  netmask: string | null;
  gateway: string | null;
  nameservers: string[];
}

/** What the wizard was given, the password left out. */
export interface WizardSettings {
  language: string;
  timezone: string;
  entity_name: string | null;
  network: WizardNetwork | null;
  run_scripts: boolean;
}

export interface WizardRecord extends WizardSettings {
  /** Always 1: the store holds one wizard record. */
  id: number;
  /** ISO 8601 instant the wizard ran. */
  configured_at: string;
}

export const wizardRuns = new Collection<WizardRecord>("wizard");

const WIZARD_ID = 1;

/** True once the wizard has run or any web service user exists. */
export async function isConfigured(store: Store): Promise<boolean> {
  return await wizardRuns.get(store, WIZARD_ID) !== null || await hasWebServiceUsers(store);
}

/** The settings the wizard recorded, or null when it has not run. */
export const wizardSettings = (store: Store) => wizardRuns.get(store, WIZARD_ID);

/**
 * Runs the wizard: creates the `admin` web service user (ACL `#`) with `adminPassword` and
 * records `settings`, in one transaction. Answers null, changing nothing, when the store is
 * already configured.
 *
 * @example
 * const ran = await runWizard(store, "s3cret", settings, new Date());
 */
export async function runWizard(
  store: Store,
  adminPassword: string,
  settings: WizardSettings,
  now: Date,
): Promise<WizardRecord | null> {
  if (await isConfigured(store)) return null;
  const passwordHash = await hashPassword(adminPassword);
  const adminId = await webServiceUsers.nextId(store);
  return await transact(store, async (tx) => {
    if (await tx.get(wizardRuns, WIZARD_ID)) return null;
    if (await tx.findBy(webServiceUsers, "login", WIZARD_ADMIN_LOGIN)) return null;
    const record = { id: WIZARD_ID, configured_at: now.toISOString(), ...settings };
    tx.put(webServiceUsers, {
      id: adminId,
      login: WIZARD_ADMIN_LOGIN,
      name: WIZARD_ADMIN_LOGIN,
      acls: ["#"],
      password_hash: passwordHash,
    });
    tx.put(wizardRuns, record);
    return record;
  });
}
