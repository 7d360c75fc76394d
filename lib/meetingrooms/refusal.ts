/**
 * Why the meeting rooms refuse something (docs/meetingrooms.md): each area (2.0, `/1.1`, `/1.0`,
 * the CTI channel) answers a refusal in its own form.
 */

export type RoomRefusalReason =
  /** No such room, or one the caller may not see (another user's personal room). */
  | "not_found"
  /** A number outside the range its rooms take. */
  | "outside_range"
  /** A number another room or an extension holds. */
  | "number_taken"
  /** No number of the range is free. */
  | "range_full"
  /** The room holds as many participants as it takes. */
  | "room_full"
  /** No video meetings configured (the `SVC_JITSI_*` settings). */
  | "no_video"
  /** The caller owns no such room (mute, kick, record). */
  | "not_owner"
  /** The caller is not in the room. */
  | "not_participant"
  /** No such participant in the room. */
  | "no_participant"
  /** The caller has no phone to join with. */
  | "no_line"
  /** A recording already runs, or none runs. */
  | "already_recorded"
  | "not_recorded"
  /** Nobody is in the room (nothing to record). */
  | "empty";

export class RoomRefusal extends Error {
  constructor(readonly reason: RoomRefusalReason, message: string) {
    super(message);
    this.name = "RoomRefusal";
  }
}
