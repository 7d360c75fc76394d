/**
 * A throw-away MIT Kerberos realm for tests: a database under a temporary folder, `krb5kdc`
 * listening on 127.0.0.1 (TCP only) on a free port, user principals with passwords, service
 * principals written to a keytab, and `kinit`-ed credential caches for clients such as
 * `curl --negotiate`. Needs the Debian packages of `KDC_PACKAGES`.
 */
import { freePort } from "./process.ts";

/** What `ensureDebianPackages` must install for this peer (and `curl`, built with GSS-API). */
export const KDC_PACKAGES = ["krb5-kdc", "krb5-admin-server", "krb5-user", "curl"];

export interface KdcOptions {
  /** The realm's name; `SVC.TEST` unless told. */
  realm?: string;
  /** User principals and their passwords, e.g. `{ alice: "alice-pw" }`. */
  users?: Record<string, string>;
  /** Service principals with random keys written to `keytab`, e.g. `["HTTP/localhost"]`. */
  services?: string[];
  /** How long to wait for the KDC to answer. */
  timeoutMs?: number;
}

export interface Kdc {
  realm: string;
  /** The KDC's TCP port on 127.0.0.1. */
  port: number;
  /** The temporary folder holding everything; removed by `stop()`. */
  dir: string;
  /** The keytab holding the keys of `services`. */
  keytab: string;
  /**
   * The environment of a process of this realm (client or service): `KRB5_CONFIG`, and
   * `KRB5RCACHEDIR` so that a service's replay cache stays in `dir`.
   */
  env: Record<string, string>;
  /** Adds a principal: with `password`, else with a random key. */
  addPrincipal(principal: string, password?: string): Promise<void>;
  /** Writes the keys of `principals` to a new keytab `path` (in `dir` unless absolute). */
  writeKeytab(path: string, principals: string[]): Promise<string>;
  /**
   * Gets `principal` a ticket-granting ticket (`kinit`, password on stdin) in its own credential
   * cache; answers `env` plus `KRB5CCNAME` for a client process.
   */
  kinit(principal: string, password: string): Promise<Record<string, string>>;
  /** Stops the KDC and removes `dir`. */
  stop(): Promise<void>;
}

/** Runs a Kerberos tool to its end; throws with its output when it fails. */
async function run(
  program: string,
  args: string[],
  env: Record<string, string>,
  stdin = "",
): Promise<string> {
  const child = new Deno.Command(program, {
    args,
    env,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(stdin));
  await writer.close();
  const output = await child.output();
  const decoder = new TextDecoder();
  const text = decoder.decode(output.stdout) + decoder.decode(output.stderr);
  if (!output.success) throw new Error(`${program} ${args.join(" ")} failed:\n${text}`);
  return text;
}

const readText = (path: string) => Deno.readTextFile(path).catch(() => "(no log)");

/** Writes the KDC's `kdc.conf` and the realm's `krb5.conf` for a KDC on 127.0.0.1:`port`. */
async function writeConfig(dir: string, realm: string, port: number, log: string): Promise<void> {
  await Deno.writeTextFile(
    `${dir}/kdc.conf`,
    [
      "[realms]",
      ` ${realm} = {`,
      `  database_name = ${dir}/principal`,
      `  key_stash_file = ${dir}/stash`,
      `  acl_file = ${dir}/kadm5.acl`,
      `  kdc_listen = ""`,
      `  kdc_tcp_listen = 127.0.0.1:${port}`,
      " }",
      "[logging]",
      ` kdc = FILE:${log}`,
      ` admin_server = FILE:${log}`,
      ` default = FILE:${log}`,
      "",
    ].join("\n"),
  );
  await Deno.writeTextFile(
    `${dir}/krb5.conf`,
    [
      "[libdefaults]",
      ` default_realm = ${realm}`,
      " dns_lookup_kdc = false",
      " dns_lookup_realm = false",
      " rdns = false",
      " dns_canonicalize_hostname = false",
      " udp_preference_limit = 1", // TCP first: the KDC has no UDP port
      "[realms]",
      ` ${realm} = {`,
      `  kdc = 127.0.0.1:${port}`,
      " }",
      "[logging]",
      ` default = FILE:${log}`,
      "",
    ].join("\n"),
  );
}

/**
 * Creates the realm and starts its KDC; rejects (having cleaned up) when it does not answer.
 *
 * @example
 * const kdc = await startKdc({ users: { alice: "pw" }, services: ["HTTP/localhost"] });
 * try {
 *   const clientEnv = await kdc.kinit("alice", "pw");
 *   // curl --negotiate -u : http://localhost:PORT/ with clientEnv; the service uses kdc.keytab
 * } finally {
 *   await kdc.stop();
 * }
 */
export async function startKdc(options: KdcOptions = {}): Promise<Kdc> {
  const { realm = "SVC.TEST", users = {}, services = [], timeoutMs = 10_000 } = options;
  const dir = await Deno.makeTempDir({ prefix: "svc-kdc-" });
  let child: Deno.ChildProcess | null = null;
  try {
    const keytab = `${dir}/service.keytab`;
    const log = `${dir}/kdc.log`;
    const env = { KRB5_CONFIG: `${dir}/krb5.conf`, KRB5RCACHEDIR: dir };
    const adminEnv = { ...env, KRB5_KDC_PROFILE: `${dir}/kdc.conf` };
    const kadmin = (commands: string[]) =>
      run("kadmin.local", ["-r", realm], adminEnv, commands.map((line) => `${line}\n`).join(""));

    let port = freePort();
    await writeConfig(dir, realm, port, log);

    const masterPassword = crypto.randomUUID();
    await run(
      "kdb5_util",
      ["create", "-s", "-r", realm, "-P", masterPassword, "-d", `${dir}/principal`],
      adminEnv,
    );
    const created = await kadmin([
      ...Object.entries(users).map(([name, password]) => `addprinc -pw "${password}" ${name}`),
      ...services.map((name) => `addprinc -randkey ${name}`),
      ...(services.length > 0 ? [`ktadd -k ${keytab} ${services.join(" ")}`] : []),
    ]);
    // kadmin.local reading commands from stdin reports a failed command without failing itself.
    for (const name of [...Object.keys(users), ...services]) {
      if (!created.includes(`Principal "${name}@${realm}" created.`)) {
        throw new Error(`kadmin.local did not create ${name}:\n${created}`);
      }
    }

    // The port was free a moment ago; should another process take it first, the KDC exits saying
    // so and starts again on another one.
    let status: Promise<Deno.CommandStatus> | null = null;
    let exited = false;
    for (let attempt = 1; status === null; attempt++) {
      if (attempt > 1) {
        port = freePort();
        await writeConfig(dir, realm, port, log);
      }
      await Deno.writeTextFile(log, "");
      child = new Deno.Command("krb5kdc", {
        args: ["-n", "-r", realm],
        env: adminEnv,
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).spawn();
      exited = false;
      const running = child.status.finally(() => (exited = true));
      const deadline = Date.now() + timeoutMs;
      // krb5kdc logs this once its socket listens.
      while (!(await readText(log)).includes("commencing operation")) {
        if (exited) break;
        if (Date.now() > deadline) {
          throw new Error(`krb5kdc did not listen within ${timeoutMs} ms:\n${await readText(log)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      if (!exited) {
        status = running;
        break;
      }
      const text = await readText(log);
      const { code } = await running;
      child = null;
      if (attempt === 3 || !text.includes("Address already in use")) {
        throw new Error(`krb5kdc exited (${code}):\n${text}`);
      }
    }
    const ended = status;

    const running = child!;
    let stopping: Promise<void> | null = null;
    return {
      realm,
      port,
      dir,
      keytab,
      env,
      async addPrincipal(principal, password) {
        const output = await kadmin([
          password === undefined
            ? `addprinc -randkey ${principal}`
            : `addprinc -pw "${password}" ${principal}`,
        ]);
        if (!output.includes(`Principal "${principal}@${realm}" created.`)) {
          throw new Error(`kadmin.local did not create ${principal}:\n${output}`);
        }
      },
      async writeKeytab(path, principals) {
        const file = path.startsWith("/") ? path : `${dir}/${path}`;
        // -norandkey keeps the keys the KDC hands out, so every keytab of a principal agrees.
        const output = await kadmin([`ktadd -norandkey -k ${file} ${principals.join(" ")}`]);
        if (!output.includes("added to keytab")) {
          throw new Error(`kadmin.local wrote no keytab ${file}:\n${output}`);
        }
        return file;
      },
      async kinit(principal, password) {
        const cache = `FILE:${dir}/cc_${principal.replaceAll(/[^A-Za-z0-9]/g, "_")}`;
        const clientEnv = { ...env, KRB5CCNAME: cache };
        await run("kinit", [principal], clientEnv, `${password}\n`);
        return clientEnv;
      },
      stop() {
        stopping ??= (async () => {
          try {
            if (!exited) running.kill("SIGTERM");
            await ended;
          } finally {
            await Deno.remove(dir, { recursive: true });
          }
        })();
        return stopping;
      },
    };
  } catch (error) {
    if (child) {
      try {
        child.kill("SIGKILL");
      } catch {
        // it exited already
      }
      await child.status;
    }
    await Deno.remove(dir, { recursive: true });
    throw error;
  }
}
