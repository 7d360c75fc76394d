/** What the headless Chromium tests share: the page server and the clean-up of Chromium's processes. */

/** Why the tests install Debian's `chromium`. */
export const CHROMIUM_WHY = "a real headless browser for the browser tests";

/** Serves `html()` at `/` on 127.0.0.1, on a port of its own. */
export function servePage(html: () => string) {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    if (new URL(request.url).pathname !== "/") return new Response("not found", { status: 404 });
    return new Response(html(), { headers: { "Content-Type": "text/html; charset=utf-8" } });
  });
}

/**
 * The processes still running (zombies waiting to be reaped aside) of the group `pgid` or naming
 * `dir` in their command line: Chromium's crash handlers leave the group (they start a session of
 * their own) but keep their reports under `dir`, Chromium's home here.
 */
export async function leftOver(pgid: number, dir: string): Promise<number[]> {
  const found: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    let stat: string, commandLine: string;
    try {
      stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      commandLine = await Deno.readTextFile(`/proc/${entry.name}/cmdline`);
    } catch {
      continue; // gone meanwhile
    }
    // "pid (command) state ppid pgrp ...": the command may hold spaces and parentheses
    const [state, , group] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (state === "Z") continue;
    if (Number(group) === pgid || commandLine.includes(dir)) found.push(Number(entry.name));
  }
  return found;
}

/** Sends SIGKILL to `pid` (a negative one: a whole group) unless it is gone already. */
export function kill(pid: number): void {
  try {
    Deno.kill(pid, "SIGKILL");
  } catch {
    // gone already
  }
}

/** Kills Chromium's group `pgid` and every process naming `home` until none is left; removes `home`. */
export async function reap(pgid: number, home: string): Promise<void> {
  for (let tries = 0;; tries++) {
    const left = await leftOver(pgid, home);
    if (left.length === 0) break;
    if (tries === 50) throw new Error(`chromium processes left: ${left.join(", ")}`);
    kill(-pgid);
    for (const pid of left) kill(pid);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await Deno.remove(home, { recursive: true });
}
