/**
 * What supervisors' CTI sockets follow (docs/cti.md, "Supervision"): every queue's
 * `QueueStatistics`, every agent's `AgentStatistics`, the calls waiting in a queue (`QueueCalls`)
 * and the lists of queues, agents, queue members and agent groups (`getList`), each sent whole
 * when a socket subscribes, then what changed.
 *
 * - **The figures are computed here**, with the REST routes' own functions (`lib/supervision`),
 *   once per process for every socket following them; the events only say when to look again.
 *   _(decision)_ Rather than passing on the `QueueStatistics` events the counting process
 *   publishes: those come at most once a second per queue, and a socket mixing them with figures
 *   read here could get older figures after newer ones.
 * - **When**: something may have changed ({@link SupervisionFeed.changed}): an event of the live
 *   feed (any process's: a phone, an agent, a queue's `QueueStatistics`), an event of this
 *   process's platform (its listener runs after the day counters are written), a supervisor's
 *   command. A refresh runs {@link REFRESH_DELAY_MS} after the first change, at most one every
 *   {@link REFRESH_INTERVAL_MS}, and once more {@link SETTLE_MS} after the last change: a process
 *   reading another's events may read the counters before that one wrote them.
 * - **And every {@link SETTLE_MS} while a socket follows**, event or not: some changes come with
 *   none. An agent paused or unpaused while it rings, is on a call or in wrap-up keeps its state,
 *   so neither platform tells it (the simulator's step has no event, Asterisk's
 *   `QueueMemberPause` gives no `AgentStateEvent`), yet `GET /supervision/agents` shows it at
 *   once. A refresh sends only what differs, so nothing but the figures that moved goes out.
 * - Refreshes run one after the other, a new subscriber's snapshot being one of them, so a socket
 *   never gets older figures after newer ones. A refresh sends to each follower what differs from
 *   what the followers were last sent (the same for all of them), and everything to those who just
 *   subscribed.
 * - An agent's `AgentStatistics` is sent again when anything but its durations changed: those grow
 *   every second (a page counts them on from the last figures).
 * - **Each socket gets what its user's rights profile covers** (lib/rights/): the queues, agents,
 *   memberships and agent groups it covers, computed at each refresh from the profile as the store
 *   says then. A socket whose coverage changed (its profile changed, an agent joined or left one
 *   of its queues or groups) is sent every list and figure it follows again, whole, as when it
 *   subscribed: its lists (`QueueList`, …) replace what it had, and it stops getting what it no
 *   longer covers at once. A change of profile has a refresh run at once (its notice,
 *   lib/cti_session/mod.ts); else the refresh every {@link SETTLE_MS} sees it.
 */
import { type AgentGroupRecord, groupsByAgent, listAgentGroups } from "../agent_groups/store.ts";
import type { CoreServices } from "../core_services.ts";
import type { LiveCall } from "../platform/call_control.ts";
import { profileOf } from "../rights/profiles.ts";
import { type Coverage, coverageOf, covers } from "../rights/rights.ts";
import { listQueues } from "../store/queues.ts";
import {
  type AgentFigures,
  agentFigures,
  type QueueFigures,
  queueFigures,
  queueStatistics,
  waitingCalls,
} from "../supervision/mod.ts";
import type { CtiMessage } from "./messages.ts";

/** How long after a first change a refresh runs (changes come in bursts). */
export const REFRESH_DELAY_MS = 25;
/** At most one refresh this often. */
export const REFRESH_INTERVAL_MS = 200;
/** One more refresh this long after the last change; and one this often while followed. */
export const SETTLE_MS = 1_000;

/** A socket following supervision (a `CtiSession`): its user's rights profile decides. */
export interface Watcher {
  sendText(text: string): void;
  readonly user: { readonly id: number };
}

/** A message sent to the followers whose coverage covers it. */
interface Item {
  text: string;
  covered(coverage: Coverage): boolean;
}

/** The lists `getList` follows, by `objectType`. */
export const LIST_TYPES = ["queue", "agent", "queuemember", "agentgroup"] as const;
export type ListType = typeof LIST_TYPES[number];

/** Who follows one kind of message, and what they were last sent. */
class Topic {
  readonly followers = new Set<Watcher>();
  /** Subscribed since the last refresh: sent everything at the next one. */
  readonly joining = new Set<Watcher>();
  /** What the followers were last sent of each item: its message's text, or a signature. */
  sent = new Map<string, string>();

  get active(): boolean {
    return this.followers.size > 0 || this.joining.size > 0;
  }

  join(watcher: Watcher): void {
    this.followers.delete(watcher);
    this.joining.add(watcher);
  }

  leave(watcher: Watcher): void {
    this.followers.delete(watcher);
    this.joining.delete(watcher);
  }

  /** Those following or joining. */
  *watchers(): Iterable<Watcher> {
    yield* this.followers;
    yield* this.joining;
  }

  /**
   * Sends `whole(coverage)` to those joining and the `changes` each covers to the followers, then
   * counts those joining as followers; `sent` becomes what was sent.
   */
  publish(
    whole: (coverage: Coverage) => string[],
    changes: Item[],
    sent: Map<string, string>,
    coverageOf: (watcher: Watcher) => Coverage,
  ): void {
    for (const watcher of this.followers) {
      const coverage = coverageOf(watcher);
      for (const change of changes) if (change.covered(coverage)) watcher.sendText(change.text);
    }
    const wholes = new Map<string, string[]>(); // one per coverage
    for (const watcher of this.joining) {
      const coverage = coverageOf(watcher);
      let texts = wholes.get(coverage.key);
      if (!texts) wholes.set(coverage.key, texts = whole(coverage));
      for (const text of texts) watcher.sendText(text);
      this.followers.add(watcher);
    }
    this.joining.clear();
    this.sent = sent;
  }
}

const text = (msgType: string, ctiMessage: unknown) => JSON.stringify({ msgType, ctiMessage });

/** A queue as `QueueList` and `QueueConfig` show it. */
export const queueConfig = (
  queue: Pick<QueueFigures, "id" | "name" | "displayName" | "number">,
) => ({
  id: queue.id,
  name: queue.name,
  displayName: queue.displayName ?? queue.name,
  number: queue.number ?? "",
});

/** An agent as `AgentList` and `AgentConfig` show it: `groupId` its group's, null for none. */
export const agentConfig = (
  agent: Pick<AgentFigures, "id" | "number" | "firstname" | "lastname">,
  groupId: number | null,
) => ({
  id: agent.id,
  number: agent.number,
  firstName: agent.firstname ?? "",
  lastName: agent.lastname ?? "",
  groupId,
});

/** An agent group as `AgentGroupList` shows it. */
export const agentGroupConfig = (group: AgentGroupRecord) => ({
  id: group.id,
  name: group.name,
  displayName: group.display_name ?? group.name,
});

/**
 * The number of the other party of the call the agent is ringing for or on (its line's leg
 * talking, else held, else ringing), "" when none.
 */
export function callNumber(agent: AgentFigures, calls: LiveCall[]): string {
  if (agent.extension === null || (agent.state !== "ringing" && agent.state !== "on_call")) {
    return "";
  }
  const own = calls.filter((call) => call.number === agent.extension);
  const call = own.find((call) => call.state === "up" && !call.onHold) ??
    own.find((call) => call.state === "up") ?? own[0];
  return call ? call.peerNumber || call.dialled : "";
}

/** The durations of `AgentStatistics`: they grow by themselves, a page counts them on. */
const DURATIONS = new Set(["TalkTime", "PauseTime", "LoginTime"]);

/**
 * An agent's `AgentStatistics`: what it is doing (svc's names, as `GET /supervision/agents`
 * tells it) and its day's figures (docs/cti.md).
 */
export function agentStatistics(agent: AgentFigures, calls: LiveCall[]): CtiMessage {
  const statistics: { name: string; value: string | number | boolean }[] = [
    { name: "State", value: agent.state },
    { name: "StateSince", value: agent.since ?? "" },
    { name: "Call", value: agent.call ?? "" },
    { name: "CallNumber", value: callNumber(agent, calls) },
    { name: "Paused", value: agent.paused },
    { name: "PausedReason", value: agent.pausedReason ?? "" },
    { name: "PhoneNumber", value: agent.extension ?? "" },
    { name: "LoginDateTime", value: agent.loggedSince ?? "" },
    { name: "AnsweredCalls", value: agent.today.answered },
    { name: "MissedCalls", value: agent.today.missed },
    { name: "TalkTime", value: agent.today.talkSeconds },
    { name: "PauseTime", value: agent.today.pauseSeconds },
    { name: "LoginTime", value: agent.today.loginSeconds },
  ];
  return { msgType: "AgentStatistics", ctiMessage: { id: agent.id, statistics } };
}

/** The calls waiting in a queue as `QueueCalls` shows them. */
export const queueCallsMessage = (
  queueId: number,
  calls: NonNullable<Awaited<ReturnType<typeof waitingCalls>>>,
): CtiMessage => ({
  msgType: "QueueCalls",
  ctiMessage: {
    queueId,
    calls: calls.map((call) => ({
      position: call.position,
      name: call.callerName,
      number: call.callerNumber,
      queueTime: call.waitingSince,
    })),
  },
});

/** Items of a list by key, each as its message's text. */
function byKey<T>(items: T[], key: (item: T) => string | number, message: (item: T) => string) {
  return new Map(items.map((item) => [String(key(item)), message(item)]));
}

/** The texts of `now` that differ from `before`. */
const differing = (now: Map<string, string>, before: Map<string, string>) =>
  [...now].filter(([key, value]) => before.get(key) !== value).map(([key]) => key);

export class SupervisionFeed {
  readonly #queueStats = new Topic();
  readonly #agentStats = new Topic();
  readonly #lists: Record<ListType, Topic> = {
    queue: new Topic(),
    agent: new Topic(),
    queuemember: new Topic(),
    agentgroup: new Topic(),
  };
  /** The followers of each queue's waiting calls. */
  readonly #calls = new Map<number, Topic>();
  /** The sockets sent the agents' state events (the hub's `followAllAgents`): nothing sent here. */
  readonly #agentEvents = new Topic();
  /** What each socket's profile covered at the last refresh. */
  readonly #coverages = new WeakMap<Watcher, Coverage>();
  /** The refreshes, one after the other. */
  #chain: Promise<void> = Promise.resolve();
  #cancelSoon: (() => void) | null = null;
  #cancelSettle: (() => void) | null = null;
  #lastStart = -Infinity;
  #listening = false;

  constructor(readonly services: CoreServices) {}

  /** Whether any socket follows anything. */
  get active(): boolean {
    return this.#topics().some((topic) => topic.active);
  }

  /** From now on `watcher` gets every queue's `QueueStatistics`; resolves once it got them. */
  followQueueStats(watcher: Watcher): Promise<void> {
    return this.#follow(this.#queueStats, watcher);
  }

  /** From now on `watcher` gets every agent's `AgentStatistics`; resolves once it got them. */
  followAgentStats(watcher: Watcher): Promise<void> {
    return this.#follow(this.#agentStats, watcher);
  }

  /** `watcher` gets the list `type`, then its changes. */
  followList(watcher: Watcher, type: ListType): Promise<void> {
    return this.#follow(this.#lists[type], watcher);
  }

  /**
   * From now on `watcher` gets the calls waiting in `queueId` (the caller checked that the queue
   * exists); resolves once it got them.
   */
  followQueueCalls(watcher: Watcher, queueId: number): Promise<void> {
    let topic = this.#calls.get(queueId);
    if (!topic) this.#calls.set(queueId, topic = new Topic());
    return this.#follow(topic, watcher);
  }

  /**
   * `watcher` is sent agents' state events by the hub, those of the agents it covers
   * ({@link coverage}, kept up to date from now on); resolves once it is known.
   */
  followAgentEvents(watcher: Watcher): Promise<void> {
    return this.#follow(this.#agentEvents, watcher);
  }

  /** What `watcher`'s profile covered at the last refresh; undefined before its first. */
  coverage(watcher: Watcher): Coverage | undefined {
    return this.#coverages.get(watcher);
  }

  /** `watcher` no longer gets the calls waiting in `queueId`. */
  unfollowQueueCalls(watcher: Watcher, queueId: number): void {
    const topic = this.#calls.get(queueId);
    topic?.leave(watcher);
    if (topic && !topic.active) this.#calls.delete(queueId);
  }

  /** Forgets a closed socket. */
  detach(watcher: Watcher): void {
    for (const topic of this.#topics()) topic.leave(watcher);
    for (const [id, topic] of this.#calls) if (!topic.active) this.#calls.delete(id);
    if (!this.active) this.#cancel();
  }

  /** Something may have changed: a refresh follows (see the module's comment). */
  changed(): void {
    if (!this.active) return;
    const { clock } = this.services;
    if (!this.#cancelSoon) {
      const wait = Math.max(REFRESH_DELAY_MS, this.#lastStart + REFRESH_INTERVAL_MS - clock.now());
      this.#cancelSoon = clock.after(wait, () => {
        this.#cancelSoon = null;
        return this.#refreshLogged();
      });
    }
    this.#settleLater();
  }

  /** (Again) a refresh {@link SETTLE_MS} from now, then every {@link SETTLE_MS} while followed. */
  #settleLater(): void {
    this.#cancelSettle?.();
    this.#cancelSettle = this.services.clock.after(SETTLE_MS, async () => {
      this.#cancelSettle = null;
      await this.#refreshLogged();
      if (this.active && !this.#cancelSettle) this.#settleLater();
    });
  }

  /** Stops the timers (the hub closes). */
  close(): void {
    this.#cancel();
  }

  #cancel(): void {
    this.#cancelSoon?.();
    this.#cancelSoon = null;
    this.#cancelSettle?.();
    this.#cancelSettle = null;
  }

  #topics(): Topic[] {
    return [
      this.#queueStats,
      this.#agentStats,
      this.#agentEvents,
      ...Object.values(this.#lists),
      ...this.#calls.values(),
    ];
  }

  #follow(topic: Topic, watcher: Watcher): Promise<void> {
    topic.join(watcher);
    if (!this.#cancelSettle) this.#settleLater(); // what changes with no event (module comment)
    if (!this.#listening) {
      // after the platform's other listeners (the outbox, the day counters): figures read then
      // hold what the events changed
      this.#listening = true;
      this.services.platform.onEvents(() => {
        this.changed();
        return Promise.resolve();
      });
    }
    return this.#refresh();
  }

  /** A refresh after those running; rejects when its figures could not be read. */
  #refresh(): Promise<void> {
    const run = this.#chain.then(() => this.#run());
    this.#chain = run.catch(() => {});
    return run;
  }

  async #refreshLogged(): Promise<void> {
    try {
      await this.#refresh();
    } catch (error) {
      this.services.logger.warn("supervision figures not sent", { error: String(error) });
      if (this.active) this.#settleLater(); // try again
    }
  }

  async #run(): Promise<void> {
    const { services } = this;
    this.#lastStart = services.clock.now();
    const lists = this.#lists;
    const wantQueues = this.#queueStats.active || lists.queue.active;
    const wantAgents = this.#agentStats.active || lists.agent.active || lists.queuemember.active;
    const [queues, agents, calls, groups, queueList] = await Promise.all([
      wantQueues ? queueFigures(services) : [],
      wantAgents ? agentFigures(services) : [],
      this.#agentStats.active ? services.platform.liveCalls() : [],
      listAgentGroups(services.store),
      listQueues(services.store),
    ]);
    const coverage = await this.#cover(queueList, groups);
    const followed = [...this.#calls].filter(([, topic]) => topic.active);
    const waiting = await Promise.all(followed.map(([id]) => waitingCalls(services, id)));
    const queueItem = (id: number, text: string): Item => ({
      text,
      covered: (c) => covers(c.queues, id),
    });
    const agentItem = (id: number, text: string): Item => ({
      text,
      covered: (c) => covers(c.agents, id),
    });
    const coveredQueues = (c: Coverage) => queues.filter((q) => covers(c.queues, q.id));
    const coveredAgents = (c: Coverage) => agents.filter((a) => covers(c.agents, a.id));
    if (this.#queueStats.active) {
      const now = byKey(queues, (q) => q.id, (q) => JSON.stringify(queueStatistics(q)));
      const changed = differing(now, this.#queueStats.sent);
      this.#queueStats.publish(
        (c) => coveredQueues(c).map((q) => now.get(String(q.id))!),
        changed.map((key) => queueItem(Number(key), now.get(key)!)),
        now,
        coverage,
      );
    }
    if (lists.queue.active) {
      const now = byKey(queues, (q) => q.id, (q) => JSON.stringify(queueConfig(q)));
      const changed = differing(now, lists.queue.sent);
      lists.queue.publish(
        (c) => [text("QueueList", coveredQueues(c).map(queueConfig))],
        changed.map((key) =>
          queueItem(Number(key), text("QueueConfig", JSON.parse(now.get(key)!)))
        ),
        now,
        coverage,
      );
    }
    if (lists.agent.active) {
      const groupOf = groupsByAgent(groups);
      const config = (a: AgentFigures) => agentConfig(a, groupOf.get(a.id) ?? null);
      const now = byKey(agents, (a) => a.id, (a) => JSON.stringify(config(a)));
      const changed = differing(now, lists.agent.sent);
      lists.agent.publish(
        (c) => [text("AgentList", coveredAgents(c).map(config))],
        changed.map((key) =>
          agentItem(Number(key), text("AgentConfig", JSON.parse(now.get(key)!)))
        ),
        now,
        coverage,
      );
    }
    if (lists.queuemember.active) this.#publishMembers(agents, coverage);
    if (lists.agentgroup.active) {
      // the whole list again when any group changed (xuc sends no single group)
      const topic = lists.agentgroup;
      const now = new Map([["groups", JSON.stringify(groups.map(agentGroupConfig))]]);
      if (differing(now, topic.sent).length > 0) { for (const w of topic.followers) topic.join(w); }
      topic.publish(
        (c) => [
          text(
            "AgentGroupList",
            groups.filter((g) => covers(c.groups, g.id)).map(agentGroupConfig),
          ),
        ],
        [],
        now,
        coverage,
      );
    }
    if (this.#agentStats.active) this.#publishAgentStats(agents, calls, coverage);
    followed.forEach(([queueId, topic], i) => {
      const message = JSON.stringify(queueCallsMessage(queueId, waiting[i] ?? []));
      const now = new Map([["calls", message]]);
      const changes = differing(now, topic.sent).length ? [queueItem(queueId, message)] : [];
      topic.publish((c) => covers(c.queues, queueId) ? [message] : [], changes, now, coverage);
      if (waiting[i] === null) this.#calls.delete(queueId); // the queue was deleted: told empty
    });
  }

  /**
   * What each socket's profile covers now; a socket whose coverage changed since the last
   * refresh is sent everything it follows again (it joins its topics anew), and stops following
   * the calls of the queues it no longer covers. Answers the coverage of a socket.
   */
  async #cover(
    queueList: Parameters<typeof coverageOf>[1],
    groups: Parameters<typeof coverageOf>[2],
  ): Promise<(watcher: Watcher) => Coverage> {
    const { store } = this.services;
    const topics = this.#topics();
    const watchers = new Set(topics.flatMap((topic) => [...topic.watchers()]));
    for (const watcher of watchers) {
      const coverage = coverageOf(await profileOf(store, watcher.user.id), queueList, groups);
      const before = this.#coverages.get(watcher);
      this.#coverages.set(watcher, coverage);
      if (before === undefined || before.key === coverage.key) continue;
      for (const topic of topics) if (topic.followers.has(watcher)) topic.join(watcher);
      for (const [queueId, topic] of this.#calls) {
        if (!covers(coverage.queues, queueId)) topic.leave(watcher);
      }
    }
    return (watcher) => this.#coverages.get(watcher)!;
  }

  /**
   * `QueueMemberList` to those joining, `QueueMember` of each change (penalty -1: removed); each
   * socket the memberships of the queues and agents it covers.
   */
  #publishMembers(agents: AgentFigures[], coverage: (watcher: Watcher) => Coverage): void {
    const topic = this.#lists.queuemember;
    const members = agents.flatMap((agent) =>
      agent.queues.map((queue) => ({
        agentId: agent.id,
        queueId: queue.id,
        penalty: queue.penalty,
      }))
    );
    const covered = (c: Coverage, agentId: number, queueId: number) =>
      covers(c.queues, queueId) && covers(c.agents, agentId);
    const now = new Map(members.map((m) => [`${m.agentId}/${m.queueId}`, String(m.penalty)]));
    const changes = differing(now, topic.sent).map((key) => [key, Number(now.get(key))] as const);
    for (const key of topic.sent.keys()) if (!now.has(key)) changes.push([key, -1]);
    topic.publish(
      (c) => [text("QueueMemberList", members.filter((m) => covered(c, m.agentId, m.queueId)))],
      changes.map(([key, penalty]): Item => {
        const [agentId, queueId] = key.split("/").map(Number) as [number, number];
        return {
          text: text("QueueMember", { agentId, queueId, penalty }),
          // a member removed may have left the socket's coverage with it: its queue decides
          covered: (c) => penalty < 0 ? covers(c.queues, queueId) : covered(c, agentId, queueId),
        };
      }),
      now,
      coverage,
    );
  }

  /** Every covered `AgentStatistics` to those joining; to the followers, those that changed. */
  #publishAgentStats(
    agents: AgentFigures[],
    calls: LiveCall[],
    coverage: (watcher: Watcher) => Coverage,
  ): void {
    const topic = this.#agentStats;
    const whole: [number, string][] = [];
    const changes: Item[] = [];
    const signatures = new Map<string, string>();
    for (const agent of agents) {
      const message = agentStatistics(agent, calls);
      const { statistics } = message.ctiMessage as { statistics: { name: string }[] };
      const signature = JSON.stringify(statistics.filter((stat) => !DURATIONS.has(stat.name)));
      const serialised = JSON.stringify(message);
      whole.push([agent.id, serialised]);
      if (topic.sent.get(String(agent.id)) !== signature) {
        changes.push({ text: serialised, covered: (c) => covers(c.agents, agent.id) });
      }
      signatures.set(String(agent.id), signature);
    }
    topic.publish(
      (c) => whole.filter(([id]) => covers(c.agents, id)).map(([, text]) => text),
      changes,
      signatures,
      coverage,
    );
  }
}
