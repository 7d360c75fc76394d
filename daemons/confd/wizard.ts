/**
 * `/1.1/wizard` (16.06, `run_scripts` 2022.06): the first-run set-up. `GET /wizard` answers
 * `{"configured": bool}` to anyone. `POST /wizard` takes no token and is accepted only while the
 * store is unconfigured (then 403): it creates the `admin` web service user (ACL `#`) and records
 * the settings. `GET /wizard/discover` describes the machine; it is open while the store is
 * unconfigured (no user can hold a token yet) and afterwards needs `confd.wizard.discover.read`.
 */
import { type Context, Hono, type Next } from "hono";
import * as z from "zod";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import {
  isConfigured,
  runWizard,
  WIZARD_ADMIN_LOGIN,
  type WizardNetwork,
} from "../../lib/store/wizard.ts";
import { fields, readBody } from "./body.ts";
import { ConfdError } from "./errors.ts";
import { confdAcl } from "./guard.ts";

const alreadyRun = () => new ConfdError(403, ["Forbidden - the wizard has already run"]);

const label = "[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const network = z.lazy(() => {
  const ipv4 = z.string().regex(
    /^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/,
    "Must be an IPv4 address.",
  );
  return z.object({
    hostname: z.string().max(63, "Longer than maximum length 63.")
      .regex(new RegExp(`^${label}$`), "Must be a host name."),
    domain: z.string().max(255, "Longer than maximum length 255.")
      .regex(new RegExp(`^(${label}\\.)*${label}$`), "Must be a domain name."),
    interface: z.string().regex(/^[\w:.-]{1,64}$/, "Must be an interface name.").nullable()
      .optional(),
    ip_address: ipv4.nullable().optional(),
    netmask: ipv4.nullable().optional(),
    gateway: ipv4.nullable().optional(),
    nameservers: z.array(ipv4).max(3, "At most 3 name servers.").optional(),
  });
});

const LANGUAGES = ["de_DE", "en_US", "es_ES", "fr_FR", "fr_CA", "it_IT", "nl_NL"] as const;

const isTimeZone = (zone: string) => {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
};

const wizardSchema = z.lazy(() =>
  z.object({
    admin_password: z.string().regex(
      /^[\x21-\x7e]{4,64}$/,
      "Must be 4 to 64 printable ASCII characters without spaces.",
    ),
    license: z.literal(true, "Must be true: the license must be accepted."),
    language: z.enum(LANGUAGES).optional(),
    timezone: z.string().max(128, "Longer than maximum length 128.")
      .refine(isTimeZone, "Must be a known time zone, e.g. Europe/Paris.").optional(),
    entity_name: fields.name(64).nullable().optional(),
    network: network.nullable().optional(),
    run_scripts: fields.boolean().optional(),
  })
);

/** The machine's time zone as the runtime knows it. */
const localTimeZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone;

/** True when the process may use `permission` without a prompt. */
function granted(permission: Deno.PermissionDescriptor): boolean {
  try {
    return Deno.permissions.querySync(permission).state === "granted";
  } catch {
    return false;
  }
}

/** The default IPv4 gateway from Linux's `/proc/net/route`, or null when it is not known. */
function defaultGateway(): { gateway: string; interface: string } | null {
  const path = "/proc/net/route";
  if (!granted({ name: "read", path })) return null;
  try {
    for (const line of Deno.readTextFileSync(path).split("\n").slice(1)) {
      const [name, destination, gateway] = line.trim().split(/\s+/);
      if (name && destination === "00000000" && gateway && /^[0-9A-F]{8}$/i.test(gateway)) {
        const bytes = gateway.match(/../g)!.map((hex) => parseInt(hex, 16)).reverse();
        return { gateway: bytes.join("."), interface: name };
      }
    }
  } catch {
    // not Linux, or no such file: unknown
  }
  return null;
}

/** The name servers of `/etc/resolv.conf` (three at most), or `[]` when it cannot be read. */
function nameservers(): string[] {
  const path = "/etc/resolv.conf";
  if (!granted({ name: "read", path })) return [];
  try {
    return Deno.readTextFileSync(path).split("\n")
      .map((line) => line.match(/^\s*nameserver\s+(\S+)/)?.[1])
      .filter((server): server is string => server !== undefined).slice(0, 3);
  } catch {
    return [];
  }
}

/**
 * What the wizard can suggest: host name and domain, time zone, the addresses of the network
 * interfaces (loopback left out), the default gateway and name servers. A fact the process has
 * no permission for (`--allow-sys=hostname,networkInterfaces`, `--allow-read`) is null or `[]`.
 */
export function discover() {
  const hostname = granted({ name: "sys", kind: "hostname" }) ? Deno.hostname() : null;
  const interfaces = granted({ name: "sys", kind: "networkInterfaces" })
    ? Deno.networkInterfaces()
      .filter((nic) => !/^(127\.|::1$)/.test(nic.address))
      .map((nic) => ({
        interface: nic.name,
        family: nic.family,
        ip_address: nic.address,
        netmask: nic.netmask,
        mac: nic.mac,
      }))
    : [];
  const dot = hostname?.indexOf(".") ?? -1;
  return {
    hostname: dot > 0 ? hostname!.slice(0, dot) : hostname,
    domain: dot > 0 ? hostname!.slice(dot + 1) : null,
    timezone: localTimeZone(),
    interfaces,
    gateway: defaultGateway(),
    nameservers: nameservers(),
  };
}

export function wizardRoutes(services: Services) {
  const { store, tokens, clock } = services;
  const discoverAcl = confdAcl(tokens, "confd.wizard.discover.read");
  /** Open while unconfigured, then a token holding the ACL. */
  const discoverGuard = async (c: Context<AppEnv>, next: Next) =>
    await isConfigured(store) ? discoverAcl(c, next) : next();

  return new Hono<AppEnv>()
    .get("/wizard", async (c) => c.json({ configured: await isConfigured(store) }))
    .get("/wizard/discover", discoverGuard, (c) => c.json(discover()))
    .post("/wizard", async (c) => {
      if (await isConfigured(store)) throw alreadyRun();
      const { admin_password, license: _, ...input } = await readBody(c, wizardSchema);
      const settings = {
        language: input.language ?? "en_US",
        timezone: input.timezone ?? localTimeZone(),
        entity_name: input.entity_name ?? null,
        network: input.network ? completeNetwork(input.network) : null,
        run_scripts: input.run_scripts ?? true,
      };
      const ran = await runWizard(store, admin_password, settings, new Date(clock.now()));
      if (!ran) throw alreadyRun();
      c.header("Location", "/1.1/wizard");
      return c.json({ admin_login: WIZARD_ADMIN_LOGIN, ...settings }, 201);
    });
}

/** The network settings with null (or `[]`) for what was not sent. */
function completeNetwork(sent: z.infer<typeof network>): WizardNetwork {
  return {
    hostname: sent.hostname,
    domain: sent.domain,
    interface: sent.interface ?? null,
    ip_address: sent.ip_address ?? null,
    netmask: sent.netmask ?? null,
    gateway: sent.gateway ?? null,
    nameservers: sent.nameservers ?? [],
  };
}
