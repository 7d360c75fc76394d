/**
 * Real test peers come from Debian's packages (a Kerberos KDC, a CAS server, chromium, openssl).
 * `.ci/run` installs them up front; on a machine without them, a test that needs them installs
 * them here, as root, saying first what and why, so that `deno task test` keeps working on a fresh
 * machine. A peer that cannot be had fails its test; it is skipped, with a notice, only when the
 * user asks for no installation (`SVC_TEST_NO_INSTALL=1`).
 */

/** True when every package of `names` is installed. */
async function installed(names: string[]): Promise<boolean> {
  const output = await new Deno.Command("dpkg-query", {
    args: ["-W", "-f=${Status}\\n", ...names],
    stdout: "piped",
    stderr: "null",
  }).output();
  const lines = new TextDecoder().decode(output.stdout).trim().split("\n");
  return output.success && lines.length === names.length &&
    lines.every((line) => line.endsWith("install ok installed"));
}

async function run(args: string[]): Promise<void> {
  const output = await new Deno.Command(args[0]!, {
    args: args.slice(1),
    env: { DEBIAN_FRONTEND: "noninteractive" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!output.success) {
    const stderr = new TextDecoder().decode(output.stderr);
    throw new Error(`${args.join(" ")} failed (${output.code}):\n${stderr}`);
  }
}

/**
 * For `Deno.test`'s `ignore`: true when some of `names` are missing and `SVC_TEST_NO_INSTALL=1`
 * asks not to install them, after a notice naming the packages and `why` the tests need them.
 *
 * @example
 * const noChromium = await skipWithoutPackages(["chromium"], "a real browser");
 * Deno.test({ name: "…", ignore: noChromium, fn: async () => {…} });
 */
export async function skipWithoutPackages(names: string[], why: string): Promise<boolean> {
  if (Deno.env.get("SVC_TEST_NO_INSTALL") !== "1" || await installed(names)) return false;
  console.error(
    `svc tests: SVC_TEST_NO_INSTALL=1 and Debian packages missing (${names.join(" ")}, ${why}): ` +
      `skipping the tests that need them`,
  );
  return true;
}

/**
 * Makes sure the Debian packages `names` are installed, installing the missing ones with apt-get
 * (root only) after a notice saying what and `why`. Test files running in parallel take turns
 * through a lock file.
 *
 * @example
 * await ensureDebianPackages(["krb5-kdc", "krb5-admin-server", "krb5-user"], "a real KDC");
 */
export async function ensureDebianPackages(names: string[], why: string): Promise<void> {
  if (await installed(names)) return;
  if (Deno.uid() !== 0) {
    throw new Error(`missing Debian packages: run apt-get install -y ${names.join(" ")}`);
  }
  const lock = await Deno.open("/tmp/svc-tests-apt.lock", { create: true, write: true });
  try {
    await lock.lock(true);
    if (await installed(names)) return;
    console.error(
      `svc tests: installing Debian packages ${names.join(" ")} with apt-get (${why}); ` +
        `set SVC_TEST_NO_INSTALL=1 to skip these tests instead`,
    );
    const timeout = ["-o", "DPkg::Lock::Timeout=600"];
    await run(["apt-get", ...timeout, "update", "-qq"]);
    await run(["apt-get", ...timeout, "install", "-y", "-qq", "--no-install-recommends", ...names]);
  } finally {
    await lock.unlock();
    lock.close();
  }
}
