/** What an agent is doing, as supervision shows it (docs/supervision.md). */
export const ACTIVITIES = [
  "logged_out",
  "ready",
  "ringing",
  "on_call",
  "wrapup",
  "paused",
] as const;
export type Activity = typeof ACTIVITIES[number];
export type CallKind = "queue" | "incoming" | "outgoing";
