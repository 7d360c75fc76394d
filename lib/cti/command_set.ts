/**
 * The CTI commands of a concern with a folder of its own (`lib/directory/`, `lib/presence/`, …):
 * each command's fields, the ACL it needs and what it does, and what the concern sends a socket
 * once it is open. `routes/cti_commands.ts` runs them beside its own, so a new concern adds its
 * family to one list there (`FAMILIES`) and nothing else.
 */
import type * as z from "zod";
import type { CtiNotice } from "../events/messages.ts";
import type { Rights } from "../rights/rights.ts";
import type { Services } from "../services.ts";
import type { UserRecord } from "../store/users.ts";
import type { CtiSession } from "./hub.ts";
import type { CtiMessage } from "./messages.ts";

/** What a command of a family runs with. */
export interface CtiCommandContext {
  services: Services;
  session: CtiSession;
  /** The socket's user as read for this command. */
  user: UserRecord;
  /**
   * Refuses (`Forbidden`, naming the ACL) unless the socket holds `template` filled with its
   * username and `values`.
   */
  authorize(template: string, values?: Record<string, string>): void;
  /**
   * The user's supervision rights as its profile says now (lib/rights/); 403 `Forbidden` for a
   * user without one. A supervisor's command checks what it names against them.
   */
  rights(): Promise<Rights>;
  /** Sends a message to this socket only. */
  reply(message: CtiMessage): void;
}

/** One command: its fields, its ACL and what it does. */
export interface CtiCommandSpec<S extends z.ZodType = z.ZodType> {
  /** The schema of its fields (others are ignored), built at its first use. */
  fields: () => S;
  /**
   * The ACL the socket must hold before it runs (`{username}` is the socket's user); null: none,
   * or the command checks its own as it runs (through `authorize`, or a supervisor's `rights`).
   * `alias.ctiuser` grants it on the socket.
   */
  acl: string | null;
  run(c: CtiCommandContext, fields: z.infer<S>): Promise<void> | void;
}

/** A concern's commands by name, and what it sends a socket that opened. */
export interface CtiFamily {
  // deno-lint-ignore no-explicit-any -- each command has a schema of its own
  commands: Record<string, CtiCommandSpec<any>>;
  /** Sent after the hub's greeting (`LoggedOn`, …), in the order of the families. */
  greet?(c: Omit<CtiCommandContext, "authorize" | "rights">): Promise<void>;
  /**
   * By `msgType`, how the concern's notices (`services.events.notify`) reach this process's
   * sockets of their user (`sessions`), when not simply sent to each (lib/cti/hub.ts
   * `NoticeHandler`).
   */
  notices?: Record<
    string,
    (services: Services, sessions: ReadonlySet<CtiSession>, notice: CtiNotice) => void
  >;
}

/** A command, its fields' type read from its schema. */
export const ctiCommand = <S extends z.ZodType>(spec: CtiCommandSpec<S>): CtiCommandSpec<S> => spec;
