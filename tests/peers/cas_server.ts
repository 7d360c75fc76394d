/**
 * A real CAS server for tests: LemonLDAP::NG's portal (Debian's `liblemonldap-ng-portal-perl`,
 * 2.16) served by `plackup` on 127.0.0.1 and a free port, configured in a temporary folder: a
 * `lemonldap-ng.ini` (found through `LLNG_DEFAULTCONFFILE`) and a File configuration backend
 * (`conf/lmConf-1.json`) with the Demo authentication and user backends (users `dwho`, `rtyler`,
 * `msmith`, …: the password is the login), the CAS issuer enabled with one CAS application per
 * registered service and `casAccessControlPolicy: error` (an unregistered service gets no ticket),
 * and sessions in temporary File stores.
 *
 * Service tickets are had as a browser has them: the login form of `/cas/login?service=…` is
 * read (its hidden fields carry the portal's CSRF token, `requireToken` being on as by default),
 * posted back with the user's credentials, and the ticket is read from the redirect's `Location`.
 */
import { ensureDebianPackages } from "./debian.ts";
import { freePort, readLines } from "./process.ts";

/**
 * The Debian packages the peer needs: the portal and `plackup`, plus what the portal loads
 * without declaring it as a dependency (the captcha's GD and ImageMagick bindings, IO::String for
 * the issuers, XML::Simple for CAS).
 */
/** Why the tests install {@link CAS_PACKAGES}. */
export const CAS_WHY = "a real CAS server (LemonLDAP::NG) for the CAS single sign-on tests";

export const CAS_PACKAGES = [
  "liblemonldap-ng-portal-perl",
  "libplack-perl",
  "libgd-securityimage-perl",
  "libimage-magick-perl",
  "libio-string-perl",
  "libxml-simple-perl",
];

/** Where Debian puts the portal's PSGI application and its templates. */
const PORTAL_PSGI = "/usr/share/lemonldap-ng/portal/htdocs/index.psgi";
const TEMPLATES = "/usr/share/lemonldap-ng/portal/templates";

export interface CasServer {
  /** The CAS server's address, the value of `SVC_CAS_URL`: `http://127.0.0.1:<port>/cas`. */
  url: string;
  /** The portal's root, which is not a CAS endpoint. */
  portalUrl: string;
  /** Milliseconds from spawning `plackup` to a working `/cas/serviceValidate`. */
  startupMs: number;
  /** The portal's log lines so far (stderr). */
  logs: string[];
  /**
   * Logs `user` in through the login form for `service`, as a browser would, and answers the
   * service ticket of the redirect and the id of the user's single sign-on session.
   */
  serviceTicket(
    service: string,
    user: string,
    password?: string,
  ): Promise<{ ticket: string; sessionId: string }>;
  /** Ends a single sign-on session on the server, as its expiry would. */
  endSession(sessionId: string): Promise<void>;
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
}

/** LemonLDAP::NG's configuration for a portal at `portalUrl` whose files live in `dir`. */
function configuration(dir: string, portalUrl: string, services: string[]) {
  const apps = services.map((service, index) => [`app${index + 1}`, service] as const);
  return {
    cfgNum: 1,
    cfgVersion: "2.16.1",
    cfgAuthor: "svc tests",
    cfgDate: String(Math.floor(Date.now() / 1000)),
    portal: portalUrl,
    domain: "127.0.0.1",
    authentication: "Demo",
    userDB: "Same",
    passwordDB: "Demo",
    registerDB: "Null",
    demoExportedVars: { uid: "uid", cn: "cn", mail: "mail" },
    whatToTrace: "uid",
    timeout: 3600,
    globalStorage: "Apache::Session::File",
    globalStorageOptions: {
      Directory: `${dir}/sessions`,
      LockDirectory: `${dir}/sessions/lock`,
      generateModule: "Lemonldap::NG::Common::Apache::Session::Generate::SHA256",
    },
    persistentStorage: "Apache::Session::File",
    persistentStorageOptions: {
      Directory: `${dir}/psessions`,
      LockDirectory: `${dir}/psessions/lock`,
    },
    localSessionStorage: "Cache::FileCache",
    localSessionStorageOptions: {
      namespace: "lemonldap-ng-sessions",
      cache_root: `${dir}/cache`,
      cache_depth: 3,
      default_expires_in: 600,
      directory_umask: "007",
    },
    loginHistoryEnabled: 0,
    notification: 0,
    exportedHeaders: {},
    locationRules: { "127.0.0.1": { default: "accept" } },
    issuerDBCASActivation: 1,
    casAccessControlPolicy: "error",
    casAppMetaDataOptions: Object.fromEntries(
      apps.map(([app, service]) => [app, { casAppMetaDataOptionsService: service }]),
    ),
    casAppMetaDataExportedVars: Object.fromEntries(apps.map(([app]) => [app, {}])),
  };
}

/** The `lemonldap-ng.ini` naming the File configuration backend in `dir/conf`. */
function ini(dir: string): string {
  return [
    "[all]",
    "logLevel = notice",
    "logger = Lemonldap::NG::Common::Logger::Std",
    "userLogger = Lemonldap::NG::Common::Logger::Std",
    "[configuration]",
    "type = File",
    `dirName = ${dir}/conf`,
    "[portal]",
    "staticPrefix = /static",
    `templateDir = ${TEMPLATES}`,
    "languages = en",
    "",
  ].join("\n");
}

interface Running {
  child: Deno.ChildProcess;
  reading: Promise<void>;
  logs: string[];
}

/**
 * Spawns `plackup` on `port` and resolves once it accepts connections; rejects (after reaping
 * it) when it exits first or stays silent for `timeoutMs`. `inUse` tells a port taken meanwhile.
 */
async function spawnPortal(
  dir: string,
  port: number,
  timeoutMs: number,
): Promise<Running | { inUse: true }> {
  const child = new Deno.Command("plackup", {
    args: ["--no-default-middleware", "--host", "127.0.0.1", "--port", String(port), PORTAL_PSGI],
    cwd: dir,
    env: { LLNG_DEFAULTCONFFILE: `${dir}/lemonldap-ng.ini` },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const logs: string[] = [];
  const accepting = Promise.withResolvers<void>();
  const reading = readLines(child.stderr, (line) => {
    logs.push(line);
    if (line.includes("Accepting connections at")) accepting.resolve();
  });
  const exited = () => accepting.reject(new Error("plackup exited"));
  reading.then(exited, exited);
  const timer = setTimeout(
    () => accepting.reject(new Error(`plackup did not listen within ${timeoutMs} ms`)),
    timeoutMs,
  );
  try {
    await accepting.promise;
    return { child, reading, logs };
  } catch (error) {
    try {
      child.kill("SIGKILL");
    } catch {
      // it exited already
    }
    await child.status;
    await reading;
    if (logs.some((line) => line.includes("Address already in use"))) return { inUse: true };
    throw new Error(
      `LemonLDAP::NG did not start (${(error as Error).message}):\n${logs.join("\n")}`,
    );
  } finally {
    clearTimeout(timer);
  }
}

/** Decodes the few entities LemonLDAP's templates put in attribute values. */
function decodeHtml(value: string): string {
  return value.replace(
    /&(amp|lt|gt|quot|#39|#x27);/g,
    (_, name: string) =>
      ({ amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'", "#x27": "'" })[name]!,
  );
}

/** The hidden fields of the portal's login form (`<form id="lform">`). */
function hiddenFields(html: string): [string, string][] {
  const form = /<form[^>]*id="lform"[^>]*>([\s\S]*?)<\/form>/.exec(html)?.[1];
  if (form === undefined) throw new Error(`no login form in the portal's page:\n${html}`);
  const fields: [string, string][] = [];
  for (const [input] of form.matchAll(/<input\b[^>]*>/g)) {
    if (!/\btype="hidden"/.test(input)) continue;
    const name = /\bname="([^"]*)"/.exec(input)?.[1];
    if (name) {
      fields.push([decodeHtml(name), decodeHtml(/\bvalue="([^"]*)"/.exec(input)?.[1] ?? "")]);
    }
  }
  return fields;
}

/** The `name=value` pairs of a response's `Set-Cookie` headers. */
function cookies(response: Response): Map<string, string> {
  const jar = new Map<string, string>();
  for (const header of response.headers.getSetCookie()) {
    const [pair] = header.split(";");
    const equals = pair!.indexOf("=");
    if (equals > 0) jar.set(pair!.slice(0, equals).trim(), pair!.slice(equals + 1).trim());
  }
  return jar;
}

/**
 * Starts LemonLDAP::NG as a CAS server knowing `services` (installing its Debian packages first
 * when missing). Fails when it cannot start: a CAS test never runs without its peer.
 *
 * @example
 * const cas = await startCasServer({ services: ["http://127.0.0.1/cti"] });
 * try {
 *   const { ticket } = await cas.serviceTicket("http://127.0.0.1/cti", "dwho");
 * } finally {
 *   await cas.stop();
 * }
 */
export async function startCasServer(
  { services, timeoutMs = 30_000 }: { services: string[]; timeoutMs?: number },
): Promise<CasServer> {
  await ensureDebianPackages(CAS_PACKAGES, CAS_WHY);
  const dir = await Deno.makeTempDir({ prefix: "svc-cas-" });
  let running: Running | null = null;
  try {
    for (const sub of ["conf", "sessions/lock", "psessions/lock", "cache"]) {
      await Deno.mkdir(`${dir}/${sub}`, { recursive: true });
    }
    await Deno.writeTextFile(`${dir}/lemonldap-ng.ini`, ini(dir));
    const started = performance.now();
    let port = 0;
    for (let attempt = 1; !running; attempt++) {
      port = freePort();
      const portalUrl = `http://127.0.0.1:${port}/`;
      await Deno.writeTextFile(
        `${dir}/conf/lmConf-1.json`,
        JSON.stringify(configuration(dir, portalUrl, services), null, 1),
      );
      const spawned = await spawnPortal(dir, port, timeoutMs);
      if ("inUse" in spawned) {
        if (attempt === 3) throw new Error("no free port for LemonLDAP::NG after 3 attempts");
        continue;
      }
      running = spawned;
    }
    const portalUrl = `http://127.0.0.1:${port}/`;
    const url = `http://127.0.0.1:${port}/cas`;
    // The portal reports a failed initialisation only when asked: ask the CAS issuer itself.
    const probe = await fetch(`${url}/serviceValidate`);
    const answer = await probe.text();
    if (probe.status !== 200 || !answer.includes('code="INVALID_REQUEST"')) {
      throw new Error(
        `LemonLDAP::NG's CAS issuer does not work (${probe.status}):\n${answer}\n` +
          running.logs.join("\n"),
      );
    }
    const startupMs = Math.round(performance.now() - started);
    const { child, reading, logs } = running;

    let stopping: Promise<void> | null = null;
    return {
      url,
      portalUrl,
      startupMs,
      logs,
      async serviceTicket(service, user, password = user) {
        const login = `${url}/login?${new URLSearchParams({ service })}`;
        const page = await fetch(login, { redirect: "manual" });
        const html = await page.text();
        if (page.status !== 200) throw new Error(`GET ${login}: ${page.status}\n${html}`);
        const jar = cookies(page);
        const form = new URLSearchParams([...hiddenFields(html), ["user", user], [
          "password",
          password,
        ]]);
        const posted = await fetch(login, {
          method: "POST",
          redirect: "manual",
          headers: {
            "Content-Type": "application/x-www-form-urlencoded",
            Cookie: [...jar].map(([name, value]) => `${name}=${value}`).join("; "),
          },
          body: form,
        });
        const body = await posted.text();
        const location = posted.headers.get("location");
        const ticket = location ? new URL(location).searchParams.get("ticket") : null;
        const sessionId = cookies(posted).get("lemonldap");
        if (posted.status !== 302 || !ticket || !sessionId) {
          // The portal's error is a code (translated in the browser): `<span trmsg="5">`.
          const code = /\btrmsg="(\d+)"/.exec(body)?.[1];
          throw new Error(
            `${user} got no service ticket for ${service}: ${posted.status} ` +
              (code
                ? `portal error ${code} (Lemonldap::NG::Portal::Main::Constants)`
                : location ?? ""),
          );
        }
        return { ticket, sessionId };
      },
      async endSession(sessionId) {
        if (!/^[0-9a-f]+$/.test(sessionId)) throw new Error(`odd session id ${sessionId}`);
        await Deno.remove(`${dir}/sessions/${sessionId}`);
      },
      stop() {
        stopping ??= (async () => {
          try {
            child.kill("SIGTERM");
          } catch {
            // it exited already
          }
          await child.status;
          await reading;
          await Deno.remove(dir, { recursive: true });
        })();
        return stopping;
      },
    };
  } catch (error) {
    if (running) {
      try {
        running.child.kill("SIGKILL");
      } catch {
        // it exited already
      }
      await running.child.status;
      await running.reading;
    }
    await Deno.remove(dir, { recursive: true });
    throw error;
  }
}
