/**
 * The embedded simulated PBX (`SVC_PLATFORM=sim`, decisions §8): the {@link Platform} every area
 * calls, plus the control API of `routes/sim.ts`. Its calls live in memory; its configuration is
 * read from the store at each step. docs/platform.md tells how it behaves.
 */
import type { Clock } from "../../clock.ts";
import { StoreUnavailable } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import type { AgentRecord } from "../../store/agents.ts";
import type { QueueRecord } from "../../store/queues.ts";
import type { Store } from "../../store/store.ts";
import type { UserRecord } from "../../store/users.ts";
import {
  type AgentPresence,
  type CallStarted,
  type CallVariables,
  type PhoneStatus,
  type Platform,
  type PlatformConnection,
  type PlatformEvent,
  type PlatformListener,
  PlatformRefusal,
  type VoicemailCounts,
  type WaitingCall,
} from "../port.ts";
import type {
  CallCommand,
  Conference,
  LiveCall,
  Transfer,
  TransferRequest,
} from "../call_control.ts";
import type { RoomCommand, RoomState } from "../rooms.ts";
import { login, logout, pause, presence, settleAgents, unpause } from "./agents.ts";
import {
  addToConference,
  callCommand,
  cancelTransfer,
  completeTransfer,
  conferenceList,
  conferenceOfId,
  endConference,
  liveCalls,
  partyHangsUp,
  removeFromConference,
  startConference,
  startTransfer,
  transferList,
  transferOfId,
} from "./call_control.ts";
import { dialFromPhone, newCall, reachNumber } from "./calls.ts";
import {
  act,
  callList,
  phoneList,
  phoneStatus,
  type PolicyChange,
  pressKeys,
  setPolicy,
  type SimAction,
  type SimCall,
  type SimPhone,
} from "./control.ts";
import { type Directory, type DirectoryLoader, directoryLoader } from "../directory.ts";
import { EventDelivery } from "../delivery.ts";
import { listen, settleSpies } from "./listen.ts";
import { dispatch, enqueue, waitingCalls } from "./queues.ts";
import { mailboxCounts } from "./voicemail.ts";
import { checkRoomNotFull, endRoom, recordRoom, roomCommand, roomList, roomOfId } from "./rooms.ts";
import { type PhonePolicy, SimState, type Step, type TimerOwner } from "./state.ts";

export type { PolicyChange, SimAction, SimCall, SimPhone } from "./control.ts";
export { SIM_ACTIONS } from "./control.ts";
export { EXTERNAL, POLICY_NAMES, type PolicyName } from "./state.ts";

export interface SimOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** `SVC_SIM_ANSWER_MS`: default ring time of a phone with the `auto` policy. */
  answerMs: number;
  /** `SVC_SIM_TALK_MS`: talk time after which a phone that answered by itself hangs up; 0 never. */
  talkMs: number;
}

/**
 * The simulated PBX. Every command and timer runs as one step of a single queue; a step's events
 * reach the listeners (awaited, in order) before the next step starts. Reads (`phones`, `calls`,
 * `phoneStatuses`, `agentPresence`) do not wait for the queue, so a listener may call them; a
 * listener must not await a command (it would wait for its own step to end).
 */
export class SimPlatform implements Platform {
  readonly #sim: SimState;
  readonly #directory: DirectoryLoader;
  /** Bumped after every step and with every new directory: see `phoneStatusVersion`. */
  #statusVersion = 0;
  #statusDirectory: Directory | null = null;
  /** A step is running: the state may be half changed. */
  /** Steps queued, running or with their events not yet with the listeners. */
  #unsettled = 0;
  readonly #listeners: PlatformListener[] = [];
  /**
   * Event ids: the simulator runs in one process and hands each event over once, so an id only
   * has to be unique (the listeners write each id once, as they do the Asterisk adapter's).
   */
  readonly #idPrefix = `sim-${crypto.randomUUID().slice(0, 8)}-`;
  #eventCount = 0;
  readonly #timers = new Set<() => void>();
  #tail: Promise<unknown> = Promise.resolve();
  /** The steps' events on their way to the listeners, in order; a listener failing is logged. */
  readonly #delivery = new EventDelivery(async (batch) => {
    for (const listener of this.#listeners) {
      try {
        await listener(batch);
      } catch (error) {
        this.options.logger.error("platform listener failed", {
          error: String(error),
          events: batch.length,
        });
      }
    }
    return true;
  });
  #closed = false;

  constructor(readonly options: SimOptions) {
    this.#sim = new SimState({ answerMs: options.answerMs, talkMs: options.talkMs });
    this.#sim.hangup = partyHangsUp;
    this.#directory = directoryLoader(options.store);
  }

  dialNumber(
    caller: UserRecord,
    destination: string,
    variables: CallVariables,
  ): Promise<CallStarted> {
    return this.#dialNumber(caller, destination, variables, null);
  }

  dialUser(
    caller: UserRecord,
    callee: UserRecord,
    variables: CallVariables,
  ): Promise<CallStarted> {
    return this.#step(async (step) => {
      const phone = step.dir.phoneOfUser(caller.id);
      if (!phone) throw noLine(caller);
      const target = step.dir.phoneOfUser(callee.id);
      if (!target) throw noLine(callee);
      const call = await dialFromPhone(
        step,
        step.dir.users.get(caller.id) ?? caller,
        phone,
        target.extension,
        variables,
        (next) => {
          // the callee's phone as configured when the caller answers; gone: the call fails
          const now = next.dir.phoneOfUser(callee.id);
          return now ? { kind: "phone", phone: now } : null;
        },
      );
      return { linkedId: call.linkedId };
    });
  }

  /**
   * As {@link dialNumber}, the user's mobile (the `external` pseudo-phone, by its policy) rung
   * first instead of the user's phone; the destination is dialled in the main line's context.
   */
  dialFromMobile(
    caller: UserRecord,
    mobile: string,
    destination: string,
    variables: CallVariables,
  ): Promise<CallStarted> {
    return this.#dialNumber(caller, destination, variables, mobile);
  }

  /** `destination` dialled in the context of the caller's phone, rung first (or its `mobile`). */
  #dialNumber(
    caller: UserRecord,
    destination: string,
    variables: CallVariables,
    mobile: string | null,
  ): Promise<CallStarted> {
    return this.#step(async (step) => {
      const phone = step.dir.phoneOfUser(caller.id);
      if (!phone) throw noLine(caller);
      const call = await dialFromPhone(
        step,
        step.dir.users.get(caller.id) ?? caller,
        phone,
        destination,
        variables,
        (next) => next.dir.resolve(destination, phone.context),
        mobile,
      );
      return { linkedId: call.linkedId };
    });
  }

  dialFromQueue(
    _requester: UserRecord,
    queue: QueueRecord,
    destination: string,
    variables: CallVariables,
    callerId: { name: string | null; number: string | null },
  ): Promise<CallStarted> {
    return this.#step((step) => {
      const current = step.dir.queues.get(queue.id) ?? queue;
      const call = newCall(step, {
        kind: "from_queue",
        context: current.context,
        dialled: destination,
        shownNumber: callerId.number ?? current.number ?? current.name,
        shownName: callerId.name ?? current.display_name ?? current.name,
        src: {
          userId: null,
          username: "",
          number: callerId.number ?? current.number ?? current.name,
        },
        variables,
      });
      enqueue(step, call, current, null);
      return Promise.resolve({ linkedId: call.linkedId });
    });
  }

  dialToQueue(
    queue: QueueRecord,
    destination: string,
    callerIdNumber: string,
    variables: CallVariables,
  ): Promise<CallStarted> {
    return this.#step(async (step) => {
      const current = step.dir.queues.get(queue.id) ?? queue;
      const call = newCall(step, {
        kind: "to_queue",
        context: current.context,
        dialled: destination,
        shownNumber: callerIdNumber,
        shownName: "",
        src: { userId: null, username: "", number: callerIdNumber },
        variables,
      });
      call.toQueueId = current.id;
      await reachNumber(step, call, destination, current.context);
      return { linkedId: call.linkedId };
    });
  }

  async liveCalls(): Promise<LiveCall[]> {
    return liveCalls(this.#sim, await this.#directory.load({ recent: true }));
  }

  callCommand(callId: string, command: CallCommand): Promise<void> {
    return this.#step((step) => callCommand(step, callId, command));
  }

  startTransfer(request: TransferRequest): Promise<Transfer> {
    return this.#step((step) => startTransfer(step, request));
  }

  transfers(): Promise<Transfer[]> {
    return Promise.resolve(transferList(this.#sim));
  }

  completeTransfer(id: string): Promise<void> {
    return this.#step((step) => completeTransfer(step, transferOfId(step.sim, id)));
  }

  cancelTransfer(id: string): Promise<void> {
    return this.#step((step) => cancelTransfer(step, transferOfId(step.sim, id)));
  }

  startConference(hostCallId: string, participantCallIds: string[]): Promise<Conference> {
    return this.#step((step) => startConference(step, hostCallId, participantCallIds));
  }

  conferences(): Promise<Conference[]> {
    return Promise.resolve(conferenceList(this.#sim));
  }

  addToConference(conferenceId: string, callId: string): Promise<void> {
    return this.#step((step) =>
      addToConference(step, conferenceOfId(step.sim, conferenceId), callId)
    );
  }

  removeFromConference(conferenceId: string, callId: string): Promise<void> {
    return this.#step((step) =>
      removeFromConference(step, conferenceOfId(step.sim, conferenceId), callId)
    );
  }

  endConference(conferenceId: string): Promise<void> {
    return this.#step((step) => endConference(step, conferenceOfId(step.sim, conferenceId)));
  }

  async rooms(): Promise<RoomState[]> {
    return roomList(this.#sim, await this.#directory.load({ recent: true }));
  }

  roomCommand(roomId: string, callId: string, command: RoomCommand): Promise<void> {
    return this.#step((step) => roomCommand(step, roomOfId(step.sim, roomId), callId, command));
  }

  recordRoom(roomId: string, on: boolean): Promise<void> {
    return this.#step((step) => Promise.resolve(recordRoom(step, roomOfId(step.sim, roomId), on)));
  }

  /** Nobody in the room: nothing to do. */
  endRoom(roomId: string): Promise<void> {
    return this.#step(async (step) => {
      const room = step.sim.rooms.get(roomId);
      if (room) await endRoom(step, room);
    });
  }

  /** As {@link dialUser}, toward the room: no PIN asked once the user's phone answered. */
  inviteToRoom(user: UserRecord, roomId: string): Promise<CallStarted> {
    return this.#step(async (step) => {
      const config = step.dir.rooms.get(roomId);
      if (!config?.number) throw new PlatformRefusal("no_room", `no room ${roomId} to join`);
      const phone = step.dir.phoneOfUser(user.id);
      if (!phone) throw noLine(user);
      checkRoomNotFull(step.sim, config);
      const call = await dialFromPhone(
        step,
        step.dir.users.get(user.id) ?? user,
        phone,
        config.number,
        {},
        (next) => {
          // the room as configured when the phone answers; deleted meanwhile: the call fails
          const room = next.dir.rooms.get(roomId);
          return room ? { kind: "room", room, invited: true } : null;
        },
      );
      return { linkedId: call.linkedId };
    });
  }

  /** Nothing to push: the simulator reads the user record at each call. */
  userServicesChanged(_user: UserRecord): Promise<void> {
    return Promise.resolve();
  }

  agentLogin(agent: AgentRecord, extension: string, context: string): Promise<void> {
    return this.#step((step) => Promise.resolve(login(step, agent, extension, context)));
  }

  agentLogout(agentId: number): Promise<void> {
    return this.#step((step) => Promise.resolve(logout(step, agentId)));
  }

  agentPause(agentId: number, reason: string | null): Promise<void> {
    return this.#step((step) => Promise.resolve(pause(step, agentId, reason)));
  }

  agentUnpause(agentId: number): Promise<void> {
    return this.#step((step) => Promise.resolve(unpause(step, agentId)));
  }

  /**
   * Nothing to push: every step reads the queues' members from the directory. An empty step runs,
   * so that a queue call waiting in a queue the agent just joined is offered to it at once.
   */
  agentQueuesChanged(_agentId: number): Promise<void> {
    return this.#step(() => Promise.resolve());
  }

  agentPresence(agentId: number): Promise<AgentPresence> {
    return Promise.resolve(presence(this.#sim.agents, agentId));
  }

  agentPresences(agentIds: readonly number[]): Promise<AgentPresence[]> {
    return Promise.resolve(agentIds.map((agentId) => presence(this.#sim.agents, agentId)));
  }

  /**
   * Presences change only in a step: null while one runs (its listeners included), else the
   * number bumped after each step (`phoneStatusVersion`'s, which a new directory bumps too).
   */
  agentPresenceVersion(): number | null {
    return this.#unsettled > 0 ? null : this.#statusVersion;
  }

  queueCalls(): Promise<WaitingCall[]> {
    return Promise.resolve(waitingCalls(this.#sim));
  }

  listen(supervisor: UserRecord, agentId: number): Promise<CallStarted> {
    return this.#step((step) => listen(step, supervisor, agentId));
  }

  async voicemailCounts(voicemailId: number): Promise<VoicemailCounts> {
    return mailboxCounts(this.#sim, await this.#directory.load({ recent: true }), voicemailId);
  }

  async phoneStatuses(numbers: string[]): Promise<Map<string, PhoneStatus>> {
    const dir = await this.#directory.load({ recent: true });
    return new Map(numbers.map((number) => [number, phoneStatus(this.#sim, dir, number)]));
  }

  /**
   * Statuses change only in a step (calls, policies) or with the directory (lines, DND): null
   * while a step runs (its listeners included) or when the directory must be read again, else a
   * number bumped after each step and with each new directory.
   */
  phoneStatusVersion(): number | null {
    const dir = this.#directory.recent();
    if (!dir || this.#unsettled > 0) return null;
    if (dir !== this.#statusDirectory) {
      this.#statusDirectory = dir;
      this.#statusVersion++;
    }
    return this.#statusVersion;
  }

  onEvents(listener: PlatformListener): void {
    this.#listeners.push(listener);
  }

  /** Nothing runs in the background until a command or a timer. */
  start(): void {}

  /** The simulator is always there. */
  reachable(): boolean {
    return true;
  }

  connection(): PlatformConnection {
    return { adapter: "sim", state: "ready" };
  }

  /** Cancels every timer: no call moves any more; commands still answer. */
  close(): Promise<void> {
    this.#closed = true;
    for (const cancel of [...this.#timers]) cancel();
    return Promise.resolve();
  }

  /** Every phone with what it is doing and its policy, then the `external` pseudo-phone. */
  async phones(): Promise<SimPhone[]> {
    return phoneList(this.#sim, await this.#directory.load());
  }

  /** The calls in progress with their legs. */
  calls(): SimCall[] {
    return callList(this.#sim);
  }

  /** Acts on the phone's current call (`no_phone`, `no_call` refusals). */
  act(extension: string, action: SimAction): Promise<void> {
    return this.#step((step) => act(step, extension, action));
  }

  /**
   * The phone's user presses keys on its current call (the one up): a meeting room asking its PIN
   * reads them, else the others hear them (`no_phone`, `no_call`, `not_talking` refusals).
   */
  pressKeys(extension: string, digits: string): Promise<void> {
    return this.#step((step) => pressKeys(step, extension, digits));
  }

  /** Sets how the phone (or `external`) answers its next calls. */
  setPolicy(extension: string, change: PolicyChange): Promise<PhonePolicy> {
    return this.#step((step) => Promise.resolve(setPolicy(step, extension, change)));
  }

  /**
   * Runs `body` as the next step of the queue: with a fresh directory, then agents whose queue
   * leg ended are settled and waiting queue calls are offered; then the step's events go to the
   * listeners. The answer (or the refusal) of `body` is the step's, once its events are with the
   * listeners. The next step runs as soon as this one's body is done, while its events are being
   * written: steps are serial (each sees the state the last one left), their events in their
   * order, and those of steps that ended meanwhile go to the listeners together
   * (`lib/platform/delivery.ts`): a day of traffic is not held up by one store commit per step.
   */
  #step<T>(body: (step: Step) => Promise<T>): Promise<T> {
    this.#unsettled++;
    const events: PlatformEvent[] = [];
    const run = this.#tail.then(async () => {
      const step: Step = {
        sim: this.#sim,
        dir: await this.#directory.load(),
        now: this.options.clock.now(),
        emit: (event) => events.push({ ...event, id: `${this.#idPrefix}${++this.#eventCount}` }),
        later: (owner, ms, task) => this.#later(owner, ms, task),
      };
      try {
        return await body(step);
      } finally {
        settleAgents(step);
        await dispatch(step, reachNumber);
        settleAgents(step);
        await settleSpies(step);
      }
    });
    this.#tail = run.catch(() => {});
    const delivered = run.then(() => {}, () => {}).then(() => this.#delivery.push(events))
      .finally(() => {
        this.#statusVersion++;
        this.#unsettled--;
      });
    return delivered.then(() => run);
  }

  /**
   * A timer whose task runs as a step; cancelled with its owner or by `close()`. When the store
   * cannot be read (the step's directory), nothing has changed yet: the task is tried again a
   * second later, so that no call stays stuck once the store is back.
   */
  #later(owner: TimerOwner, ms: number, task: (step: Step) => Promise<void> | void): void {
    if (this.#closed) return;
    const cancel = () => {
      stop();
      owner.timers.delete(cancel);
      this.#timers.delete(cancel);
    };
    const stop = this.options.clock.after(ms, async () => {
      owner.timers.delete(cancel);
      this.#timers.delete(cancel);
      try {
        await this.#step((step) => Promise.resolve(task(step)));
      } catch (error) {
        if (error instanceof StoreUnavailable) {
          this.options.logger.warn("sim step postponed: store unreachable", {
            cause: String(error.cause),
          });
          this.#later(owner, STORE_RETRY_MS, task);
          return;
        }
        this.options.logger.error("sim step failed", {
          error: String(error),
          stack: (error as Error)?.stack,
        });
      }
    });
    owner.timers.add(cancel);
    this.#timers.add(cancel);
  }
}

/** How long a timer's step waits before it is tried again while the store is unreachable. */
const STORE_RETRY_MS = 1000;

const noLine = (user: UserRecord) =>
  new PlatformRefusal("no_line", `user ${user.username ?? user.id} has no line`);
