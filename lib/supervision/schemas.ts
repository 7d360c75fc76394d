/**
 * The schemas of supervision's REST answers (docs/supervision.md): the OpenAPI document's, read by
 * the routes (routes/supervision.ts) and not by the figures' code the start loads, which takes
 * their types only (docs/performance.md). Each built on first use (`z.lazy`, functions).
 */
import * as z from "zod";
import { ACTIVITIES } from "./activities.ts";

/** The fields of a queue's figures of one day (a function: built on use, not at every start). */
export const queueDayFields = () => ({
  entered: z.int().meta({ description: "Calls that joined the queue" }),
  answered: z.int().meta({ description: "Calls an agent answered" }),
  abandoned: z.int().meta({ description: "Calls whose caller hung up while waiting" }),
  abandonedShort: z.int().meta({
    description: "Of those, the ones that waited less than the short-abandon seconds",
  }),
  timeout: z.int().meta({ description: "Calls that left on the queue's timeout" }),
  answeredWithinServiceLevel: z.int().meta({
    description: "Calls answered after waiting at most the service level",
  }),
  serviceLevelPercent: z.number().nullable().meta({
    description: "answeredWithinServiceLevel / entered × 100 (xuc's), null with no call entered",
  }),
  abandonedAfterShortPercent: z.number().nullable().meta({
    description: "(abandoned − abandonedShort) / entered × 100, null with no call entered",
  }),
  meanWaitSeconds: z.int().nullable().meta({
    description: "Mean wait of the answered calls, null with none",
  }),
  maxWaitSeconds: z.int().meta({ description: "Longest wait of an answered call" }),
  meanTalkSeconds: z.int().nullable().meta({
    description: "Mean talk time of the calls completed, null with none",
  }),
});

/** A queue's figures of one day. */
export type QueueDayFigures = z.infer<z.ZodObject<ReturnType<typeof queueDayFields>>>;

/** The fields of an agent's figures of one day. */
export const agentDayFields = () => ({
  answered: z.int().meta({ description: "Queue calls answered" }),
  missed: z.int().meta({ description: "Queue calls that rang the agent, not answered" }),
  talkSeconds: z.int().meta({ description: "Time on queue calls" }),
  pauseSeconds: z.int().meta({ description: "Time on pause" }),
  loginSeconds: z.int().meta({ description: "Time logged in" }),
});

/** An agent's figures of one day. */
export type AgentDayFigures = z.infer<z.ZodObject<ReturnType<typeof agentDayFields>>>;

/** A queue as `GET /supervision/queues` shows it (built on first use, `z.lazy`). */
export const QUEUE_FIGURES = z.lazy(() =>
  z.object({
    id: z.int(),
    name: z.string(),
    displayName: z.string().nullable(),
    number: z.string().nullable(),
    timeZone: z.string().meta({ description: "Whose midnight starts the queue's day" }),
    serviceLevelSeconds: z.int(),
    waitingCalls: z.int().meta({ description: "Calls waiting now" }),
    longestWaitSeconds: z.int().meta({
      description: "How long the longest waiting call has waited",
    }),
    agents: z.object({
      members: z.int().meta({ description: "Agents of the queue" }),
      logged: z.int(),
      ready: z.int(),
      ringing: z.int(),
      onCall: z.int(),
      wrapup: z.int(),
      paused: z.int(),
    }).meta({ description: "What the queue's agents are doing now" }),
    today: z.object({
      ...queueDayFields(),
      day: z.string().meta({ description: "YYYY-MM-DD in the queue's time zone" }),
    }),
  })
);

export type QueueFigures = z.infer<typeof QUEUE_FIGURES>;

/** A call waiting in a queue, as `GET /supervision/queues/{id}/calls` shows it. */
export const WAITING_CALL = z.lazy(() =>
  z.object({
    position: z.int().meta({ description: "Its place in the queue, from 1" }),
    callerNumber: z.string(),
    callerName: z.string(),
    waitingSince: z.string().meta({ description: "When it joined the queue (ISO 8601 UTC)" }),
    waitSeconds: z.int(),
    linkedId: z.string(),
  })
);

export type WaitingCallFigures = z.infer<typeof WAITING_CALL>;

/** An agent as `GET /supervision/agents` shows it (built on first use, `z.lazy`). */
export const AGENT_FIGURES = z.lazy(() =>
  z.object({
    id: z.int(),
    number: z.string(),
    firstname: z.string().nullable(),
    lastname: z.string().nullable(),
    state: z.enum(ACTIVITIES),
    call: z.enum(["queue", "incoming", "outgoing"]).nullable().meta({
      description: "The call it is on or rung for",
    }),
    since: z.string().nullable().meta({
      description: "When it entered its state (ISO 8601 UTC), null when unknown",
    }),
    paused: z.boolean(),
    pausedReason: z.string().nullable(),
    extension: z.string().nullable(),
    loggedSince: z.string().nullable().meta({ description: "When it logged in (ISO 8601 UTC)" }),
    queues: z.array(z.object({ id: z.int(), name: z.string(), penalty: z.int() })),
    today: z.object({
      ...agentDayFields(),
      day: z.string().meta({ description: "YYYY-MM-DD in the default time zone" }),
    }),
  })
);

export type AgentFigures = z.infer<typeof AGENT_FIGURES>;

/** An interval of a queue's day, as `GET /supervision/queues/{id}/intervals` shows it. */
export const QUEUE_INTERVAL = z.lazy(() => {
  const { entered, answered, answeredWithinServiceLevel, abandoned, timeout } = queueDayFields();
  return z.object({
    start: z.string().meta({ description: "When it starts (ISO 8601 UTC)" }),
    time: z.string().meta({ description: "When it starts, HH:MM in the queue's time zone" }),
    entered,
    answered,
    answeredWithinServiceLevel,
    abandoned,
    timeout,
    waitingMax: z.int().meta({
      description: "The most calls waiting at once: those waiting when it began, or the place " +
        "in the queue of a call that joined in it",
    }),
    serviceLevelPercent: z.number().nullable().meta({
      description: "answeredWithinServiceLevel / entered × 100 of the interval, at most 100; " +
        "null with no call entered in it",
    }),
  });
});

/** `GET /supervision/queues/{id}/intervals`: a queue's day, interval by interval. */
export const QUEUE_INTERVALS = z.lazy(() =>
  z.object({
    queueId: z.int(),
    day: z.string().meta({ description: "YYYY-MM-DD in the queue's time zone" }),
    timeZone: z.string().meta({ description: "Whose midnight starts the queue's day" }),
    intervalMinutes: z.int().meta({ description: "How long an interval lasts: 15" }),
    serviceLevelSeconds: z.int(),
    intervals: z.array(QUEUE_INTERVAL).meta({
      description: "Every interval from the day's start to now (the current one included), or " +
        "to the day's end; none for a day to come",
    }),
  })
);

export type QueueIntervals = z.infer<typeof QUEUE_INTERVALS>;

/** A queue's row of `GET /supervision/history`. */
export const QUEUE_HISTORY_ROW = z.lazy(() =>
  z.object({
    ...queueDayFields(),
    day: z.string(),
    queueId: z.int(),
    name: z.string().meta({ description: "The queue's name; empty when it was deleted since" }),
    displayName: z.string().nullable(),
    number: z.string().nullable(),
  })
);

/** An agent's row of `GET /supervision/history`. */
export const AGENT_HISTORY_ROW = z.lazy(() =>
  z.object({
    ...agentDayFields(),
    day: z.string(),
    agentId: z.int(),
    number: z.string().meta({
      description: "The agent's number; empty when it was deleted since",
    }),
    firstname: z.string().nullable(),
    lastname: z.string().nullable(),
  })
);

/** `GET /supervision/history` as JSON. */
export const HISTORY = z.lazy(() =>
  z.object({
    from: z.string(),
    to: z.string(),
    queues: z.array(QUEUE_HISTORY_ROW),
    agents: z.array(AGENT_HISTORY_ROW),
  })
);

export type SupervisionHistory = z.infer<typeof HISTORY>;
