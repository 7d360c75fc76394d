/**
 * What the live tests' phones hear (`tests/peers/baresip_phone.ts` with `record`): each phone
 * sends its own tone, and a recording is read as a timeline of 100 ms windows named by the tone
 * that fills them.
 */
import assert from "node:assert/strict";
import type { Phone } from "../peers/baresip_phone.ts";
import { type Audio, parseWav, toneLevel } from "../peers/wav.ts";

/** The tone each phone sends, in Hz; the PBX's music on hold is {@link MUSIC_HZ}. */
export const TONES: Record<string, number> = { alice: 440, bob: 1000, carol: 1600 };
export const MUSIC_HZ = 300;

/** `audio` cut in windows of 100 ms. */
export function windows(audio: Audio): Audio[] {
  const size = audio.rate / 10;
  const parts: Audio[] = [];
  for (let at = 0; at + size <= audio.samples.length; at += size) {
    parts.push({ ...audio, samples: audio.samples.subarray(at, at + size) });
  }
  return parts;
}

/** Which tone each window of 100 ms is, or "silence". */
export function timeline(audio: Audio, tones: Record<string, number>): string[] {
  return windows(audio).map((part) =>
    Object.entries(tones).find(([, hz]) => toneLevel(part, hz) > 0.3)?.[0] ?? "silence"
  );
}

/** How many of `windows` are `name`. */
export const count = (windows: string[], name: string) =>
  windows.filter((one) => one === name).length;

/** The new `-dec.wav` recording of `phone` since `before` (what it heard of its last call). */
export async function recordingSince(phone: Phone, before: Set<string>): Promise<Audio> {
  const files = (await phone.recordings()).filter((file) =>
    !before.has(file) && file.endsWith("-dec.wav")
  );
  assert.equal(files.length, 1, `${phone.user}'s recording of the call: ${files}`);
  return parseWav(await Deno.readFile(files[0]!));
}

/** The timeline of what `phone` heard of its last call since `before`. */
export async function heardSince(phone: Phone, before: Set<string>): Promise<string[]> {
  return timeline(await recordingSince(phone, before), TONES);
}

/** How many windows of 100 ms of `audio` hold both people's tones (a supervisor's listening). */
export const windowsWithBoth = (audio: Audio, one: string, other: string) =>
  windows(audio).filter((part) =>
    toneLevel(part, TONES[one]!) > 0.1 && toneLevel(part, TONES[other]!) > 0.1
  ).length;
