/**
 * What the headless Chromium tests share: the page server, a DevTools protocol client, and the
 * clean-up of Chromium's processes.
 */
import { readLines } from "../peers/process.ts";
import { type RunningServer, startServer, withTempDir } from "./server.ts";

export const CHROMIUM = "/usr/bin/chromium";

/** Why the tests install Debian's `chromium`. */
export const CHROMIUM_WHY = "a real headless browser for the browser tests";

/** Serves `html()` at `/` on 127.0.0.1, on a port of its own. */
export function servePage(html: () => string) {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    if (new URL(request.url).pathname !== "/") return new Response("not found", { status: 404 });
    return new Response(html(), { headers: { "Content-Type": "text/html; charset=utf-8" } });
  });
}

/** A file of a page: its content type and body. */
export interface PageFile {
  type: string;
  body: string;
}

/** Serves `files()` by path (`/` the page) on 127.0.0.1, on a port of its own. */
export function serveFiles(files: () => Record<string, PageFile>) {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const file = files()[new URL(request.url).pathname];
    if (!file) return new Response("not found", { status: 404 });
    return new Response(file.body, { headers: { "Content-Type": file.type } });
  });
}

/**
 * Opens `url` in a new tab and answers a function evaluating an expression there, its promise
 * awaited, answering its value (a thrown error or rejection throws, with the page's log).
 */
export async function openTab(devtools: DevTools, url: string) {
  const { targetId } = await devtools.send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await devtools.send("Target.attachToTarget", { targetId, flatten: true });
  await devtools.send("Runtime.enable", {}, sessionId);
  await devtools.send("Page.enable", {}, sessionId);
  await devtools.send("Page.navigate", { url }, sessionId);
  return async (expression: string, timeoutMs = 30_000): Promise<unknown> => {
    const answer = await devtools.send("Runtime.evaluate", {
      expression,
      awaitPromise: true,
      returnByValue: true,
      timeout: timeoutMs,
    }, sessionId);
    if (answer.exceptionDetails) {
      const details = answer.exceptionDetails;
      throw new Error(
        `the page failed: ${details.exception?.description ?? details.text}\n${
          devtools.pageLog.join("\n")
        }`,
      );
    }
    return answer.result.value;
  };
}

/** Waits until `test()` (an expression evaluated in the page by `evaluate`) is true. */
export async function untilPage(
  evaluate: (expression: string) => Promise<unknown>,
  test: string,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!await evaluate(`Boolean(${test})`)) {
    if (performance.now() > deadline) throw new Error(`the page never got ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
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

/** A minimal DevTools protocol client over the browser's WebSocket. */
export class DevTools {
  #nextId = 1;
  #pending = new Map<number, { resolve: (value: unknown) => void; reject: (e: Error) => void }>();
  // deno-lint-ignore no-explicit-any
  #listeners = new Map<string, ((params: any) => void)[]>();
  /** Console lines and uncaught exceptions of the page, for failure messages. */
  readonly pageLog: string[] = [];

  /** Calls `listener` with the parameters of every event `method` (of any session). */
  // deno-lint-ignore no-explicit-any
  onEvent(method: string, listener: (params: any) => void): void {
    this.#listeners.set(method, [...this.#listeners.get(method) ?? [], listener]);
  }

  private constructor(private readonly socket: WebSocket) {
    socket.onmessage = (event) => {
      const message = JSON.parse(event.data);
      if (message.id !== undefined) {
        const waiting = this.#pending.get(message.id);
        this.#pending.delete(message.id);
        if (message.error) waiting?.reject(new Error(JSON.stringify(message.error)));
        else waiting?.resolve(message.result);
      } else if (message.method === "Runtime.consoleAPICalled") {
        const args = message.params.args.map((arg: { value?: unknown; description?: string }) =>
          arg.value ?? arg.description
        );
        this.pageLog.push(`console.${message.params.type}: ${args.join(" ")}`);
      } else if (message.method === "Runtime.exceptionThrown") {
        const details = message.params.exceptionDetails;
        this.pageLog.push(`exception: ${details.exception?.description ?? details.text}`);
      }
      for (const listener of this.#listeners.get(message.method) ?? []) listener(message.params);
    };
    socket.onclose = () => {
      for (const waiting of this.#pending.values()) waiting.reject(new Error("DevTools closed"));
      this.#pending.clear();
    };
  }

  static async connect(url: string): Promise<DevTools> {
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = () => reject(new Error(`cannot reach DevTools at ${url}`));
    });
    return new DevTools(socket);
  }

  // deno-lint-ignore no-explicit-any
  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<any> {
    const id = this.#nextId++;
    const { promise, resolve, reject } = Promise.withResolvers<unknown>();
    this.#pending.set(id, { resolve, reject });
    this.socket.send(JSON.stringify({ id, method, params, sessionId }));
    return promise;
  }

  close(): void {
    this.socket.close();
  }
}

/**
 * Runs headless Chromium with the DevTools protocol on a loopback port, in a process group of its
 * own (`setsid`) with a temporary home, hands `use` a client connected to it, and afterwards kills
 * the group and every process naming that home, waiting until none is left.
 */
/**
 * Headless Chromium with `args`, through `setsid` (in a process group of its own, whose id is its
 * pid) and with everything it writes (profile, crash reports, caches) under `home`.
 */
export function chromiumCommand(home: string, args: string[], stdout: "null" | "piped") {
  return new Deno.Command("setsid", {
    args: [
      CHROMIUM,
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      `--user-data-dir=${home}/profile`,
      ...args,
    ],
    env: { HOME: home, XDG_CONFIG_HOME: `${home}/config`, XDG_CACHE_HOME: `${home}/cache` },
    stdin: "null",
    stdout,
    stderr: "piped",
  });
}

export async function withChromium<T>(use: (devtools: DevTools) => Promise<T>): Promise<T> {
  const home = await Deno.makeTempDir({ prefix: "svc-chromium-" });
  const child = chromiumCommand(home, [
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "about:blank",
  ], "null").spawn();
  const pgid = child.pid; // setsid runs chromium in place: the group is chromium's pid
  const stderr: string[] = [];
  const { promise: listening, resolve } = Promise.withResolvers<string | null>();
  const reading = readLines(child.stderr, (line) => {
    stderr.push(line);
    const url = /DevTools listening on (ws:\/\/\S+)/.exec(line)?.[1];
    if (url) resolve(url);
  }).finally(() => resolve(null));
  const timer = setTimeout(() => resolve(null), 15_000);
  let devtools: DevTools | null = null;
  try {
    const url = await listening;
    clearTimeout(timer);
    if (url === null) throw new Error(`chromium gave no DevTools address:\n${stderr.join("\n")}`);
    devtools = await DevTools.connect(url);
    return await use(devtools);
  } finally {
    clearTimeout(timer);
    devtools?.close();
    await reap(pgid, home);
    await child.status;
    await reading;
  }
}

/**
 * Runs `fn` with a demo server (its store in a temporary folder) that the page of `pageServer` may
 * call (its origin in `SVC_CORS_ORIGINS`), `env` added; both servers are stopped after.
 */
export async function withDemoBehind(
  pageServer: Deno.HttpServer<Deno.NetAddr>,
  env: Record<string, string>,
  fn: (server: RunningServer, pageOrigin: string) => Promise<void>,
): Promise<void> {
  const pageOrigin = `http://127.0.0.1:${pageServer.addr.port}`;
  try {
    await withTempDir(async (dir) => {
      const server = await startServer({
        SVC_KV: `${dir}/svc.kv`,
        SVC_DEMO: "true",
        SVC_CORS_ORIGINS: pageOrigin,
        ...env,
      });
      try {
        await fn(server, pageOrigin);
      } finally {
        await server.stop();
      }
    });
  } finally {
    await pageServer.shutdown();
  }
}
