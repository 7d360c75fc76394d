/**
 * Real test peers come from Debian's packages (a Kerberos KDC, a CAS server). `.ci/run` installs
 * them up front; on a machine without them, a test that needs them installs them here, as root,
 * so that `deno task test` keeps working on a fresh machine. A peer that cannot be had fails its
 * test: it never skips.
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
 * Makes sure the Debian packages `names` are installed, installing the missing ones with apt-get
 * (root only). Test files running in parallel take turns through a lock file.
 *
 * @example
 * await ensureDebianPackages(["krb5-kdc", "krb5-admin-server", "krb5-user"]);
 */
export async function ensureDebianPackages(names: string[]): Promise<void> {
  if (await installed(names)) return;
  if (Deno.uid() !== 0) {
    throw new Error(`missing Debian packages: run apt-get install -y ${names.join(" ")}`);
  }
  const lock = await Deno.open("/tmp/svc-tests-apt.lock", { create: true, write: true });
  try {
    await lock.lock(true);
    if (await installed(names)) return;
    const timeout = ["-o", "DPkg::Lock::Timeout=600"];
    await run(["apt-get", ...timeout, "update", "-qq"]);
    await run(["apt-get", ...timeout, "install", "-y", "-qq", "--no-install-recommends", ...names]);
  } finally {
    await lock.unlock();
    lock.close();
  }
}
