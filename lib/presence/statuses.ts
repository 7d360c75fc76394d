/**
 * The presences a CTI user may take (docs/cti.md, "Presence and phone hints"): XiVO's CTI
 * statuses, in the shape xuc's `UsersStatuses` gives them (`{name, color, longName, actions}`,
 * each action `{name, parameters}`, as XiVO's `ctistatus` table's `enablednd(false)` reads).
 * The list is the administrator's (`PUT /svc/api/2.0/presences`, routes/presences.ts); until one is
 * stored, {@link DEFAULT_STATUSES}. No zod here: the hub's start reads none (docs/performance.md).
 */

/**
 * What choosing a status may do, as XiVO's CTI server does it: `enablednd` sets the user's DND to
 * its parameter (`"true"`/`"false"`); `agentlogoff` logs the user's agent off; `queuepause_all` and
 * `queueunpause_all` pause (the status's name as reason) or unpause it.
 */
export const PRESENCE_ACTIONS = [
  "enablednd",
  "agentlogoff",
  "queuepause_all",
  "queueunpause_all",
] as const;

export type PresenceActionName = typeof PRESENCE_ACTIONS[number];

export interface PresenceAction {
  name: PresenceActionName;
  parameters: string;
}

export interface UserStatus {
  /** What `userStatusUpdate` sends and `UserStatusUpdate` tells. */
  name: string;
  /** `#RRGGBB`. */
  color: string;
  /** What a client shows. */
  longName: string;
  actions: PresenceAction[];
}

/** Most statuses a list holds, and the longest name, long name and parameters (characters). */
export const STATUS_LIMITS = {
  statuses: 50,
  name: 64,
  longName: 128,
  parameters: 64,
} as const;

const dnd = (on: boolean): PresenceAction[] => [{ name: "enablednd", parameters: String(on) }];

/**
 * XiVO's default CTI presences, in its order: each clears DND but `donotdisturb`, which sets it;
 * `disconnected` logs the user's agent off. A user who never chose one shows the first.
 */
export const DEFAULT_STATUSES: readonly UserStatus[] = [
  { name: "available", color: "#08FD20", longName: "Available", actions: dnd(false) },
  { name: "away", color: "#FFDD00", longName: "Away", actions: dnd(false) },
  { name: "berightback", color: "#F2833A", longName: "Be right back", actions: dnd(false) },
  { name: "outtolunch", color: "#6CA6FF", longName: "Out to lunch", actions: dnd(false) },
  { name: "donotdisturb", color: "#FF032D", longName: "Do not disturb", actions: dnd(true) },
  {
    name: "disconnected",
    color: "#9E9E9E",
    longName: "Disconnected",
    actions: [{ name: "agentlogoff", parameters: "" }],
  },
];

/** The status the user shows: the one stored when the list still has it, else the list's first. */
export function shownStatus(statuses: readonly UserStatus[], stored: string | null): UserStatus {
  return statuses.find((status) => status.name === stored) ?? statuses[0]!;
}
