/**
 * Fixtures of the CTI socket's tests: a real HTTP server on loopback serving the app, Deno's own
 * WebSocket client keeping every message it gets, and CTI users with a line.
 */
import assert from "node:assert/strict";
import { type Confd, confd, setup, type TestContext } from "../helpers.ts";

export const V2 = "/svc/api/2.0";

export interface Message {
  msgType: string;
  ctiMessage: Record<string, unknown>;
}

/** A WebSocket client keeping every message, with a way to wait for the next matching one. */
export class Client {
  readonly messages: Message[] = [];
  #read = 0;
  #waiters: (() => void)[] = [];
  closed: Promise<CloseEvent>;

  constructor(readonly socket: WebSocket) {
    socket.onmessage = (event) => {
      this.messages.push(JSON.parse(event.data));
      for (const wake of this.#waiters.splice(0)) wake();
    };
    this.closed = new Promise((resolve) => {
      socket.addEventListener("close", (event) => {
        resolve(event);
        for (const wake of this.#waiters.splice(0)) wake();
      });
    });
  }

  /** The next message (after those already taken) matching `test`, within 5 s. */
  next(test: (message: Message) => boolean, what: string): Promise<Message> {
    return this.#wait(() => {
      while (this.#read < this.messages.length) {
        const message = this.messages[this.#read++]!;
        if (test(message)) return message;
      }
    }, what);
  }

  /**
   * A message matching `test`, among all those received (whichever were taken) or within 5 s;
   * takes none.
   */
  seen(test: (message: Message) => boolean, what: string): Promise<Message> {
    return this.#wait(() => this.messages.find(test), what);
  }

  /** What `find` finds, as soon as it finds it, within 5 s. */
  async #wait(find: () => Message | undefined, what: string): Promise<Message> {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const found = find();
      if (found) return found;
      if (Date.now() > deadline || this.socket.readyState > 1) {
        throw new Error(`no ${what}; got ${JSON.stringify(this.messages.slice(-5))}`);
      }
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  type = (msgType: string) => this.next((message) => message.msgType === msgType, msgType);

  send(message: unknown): void {
    this.socket.send(typeof message === "string" ? message : JSON.stringify(message));
  }

  web(command: string, fields: Record<string, unknown> = {}): void {
    this.send({ claz: "web", command, ...fields });
  }
}

export interface Fixture {
  ctx: TestContext;
  api: Confd;
  base: string;
  server: Deno.HttpServer<Deno.NetAddr>;
  clients: Client[];
  /** Opens a socket with `token` and waits for the greeting's `LoggedOn`. */
  open(token: string): Promise<Client>;
  close(): Promise<void>;
}

export async function fixture(env: Record<string, string> = {}): Promise<Fixture> {
  const ctx = await setup(env);
  return { ctx, api: await confd(ctx), ...serve(ctx) };
}

/**
 * Serves `ctx`'s app on a loopback port: `open` opens a socket with a token and waits for its
 * `LoggedOn`; `close` closes every socket, then the hub, the platform, the server and the store.
 */
export function serve(ctx: TestContext) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, ctx.app.fetch);
  const base = `127.0.0.1:${server.addr.port}`;
  const clients: Client[] = [];
  return {
    base,
    server,
    clients,
    async open(token: string) {
      const client = new Client(new WebSocket(`ws://${base}${V2}/cti?token=${token}`));
      clients.push(client);
      await client.type("LoggedOn");
      return client;
    },
    async close() {
      for (const client of clients) client.socket.close();
      await Promise.all(clients.map((client) => client.closed));
      ctx.services.cti.close();
      await ctx.services.platform.close();
      await server.shutdown();
      ctx.services.store.close();
    },
  };
}

/** A socket of `user` whose token holds `acls` only (not what a login gives). */
export async function socketWithAcls(
  f: Fixture,
  user: { id: number; username: string | null },
  acls: string[],
): Promise<Client> {
  const identity = { userId: String(user.id), login: user.username!, userType: "cti" as const };
  return await f.open((await f.ctx.services.tokens.issue({ ...identity, acls })).token);
}

/** A CTI user (password `<username>-pw`) with a line holding `exten` in `default`. */
export async function userWithLine(api: Confd, username: string, exten: string) {
  const user = await api.create("/users", {
    firstname: username,
    username,
    password: `${username}-pw`,
  });
  const line = await api.create("/lines", { context: "default" });
  const extension = await api.create("/extensions", { exten, context: "default" });
  assert.equal((await api.put(`/lines/${line.id}/extensions/${extension.id}`)).status, 204);
  assert.equal((await api.put(`/users/${user.id}/lines/${line.id}`)).status, 204);
  return user as { id: number; username: string };
}

/** Sends `command`; its answer is one `Error` naming it with `error`; answers its message. */
export async function refused(
  client: Client,
  command: string,
  fields: Record<string, unknown>,
  error: string,
): Promise<string> {
  client.web(command, fields);
  const answer = (await client.type("Error")).ctiMessage;
  assert.deepEqual(
    [answer.error, answer.command],
    [error, command],
    `${command} ${JSON.stringify(fields)}: ${answer.message}`,
  );
  return String(answer.message);
}

export const phoneEvent = (eventType: string) => (message: Message) =>
  message.msgType === "PhoneEvent" && message.ctiMessage.eventType === eventType;
