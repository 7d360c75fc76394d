/**
 * WAV files for the telephony test peers: a sine tone to play (the PBX's music on hold), and what a
 * phone recorded read back, with how much of it is one frequency (which party or tone it heard).
 * 16-bit PCM only, the format Asterisk plays as `.wav` and baresip's sndfile module writes.
 */

/** A 16-bit PCM WAV of a `hz` sine, `seconds` long, mono, 8 kHz unless told (Asterisk's `wav`). */
export function sineWav(
  { hz, seconds, rate = 8000, amplitude = 0.3 }: {
    hz: number;
    seconds: number;
    rate?: number;
    /** Peak, as a fraction of full scale. */
    amplitude?: number;
  },
): Uint8Array {
  const count = Math.round(seconds * rate);
  const bytes = new Uint8Array(44 + 2 * count);
  const view = new DataView(bytes.buffer);
  const ascii = (at: number, text: string) => {
    for (let i = 0; i < text.length; i++) bytes[at + i] = text.charCodeAt(i);
  };
  ascii(0, "RIFF");
  view.setUint32(4, bytes.length - 8, true);
  ascii(8, "WAVE");
  ascii(12, "fmt ");
  view.setUint32(16, 16, true); // the fmt chunk's size
  view.setUint16(20, 1, true); // PCM
  view.setUint16(22, 1, true); // mono
  view.setUint32(24, rate, true);
  view.setUint32(28, rate * 2, true); // bytes per second
  view.setUint16(32, 2, true); // bytes per frame
  view.setUint16(34, 16, true); // bits per sample
  ascii(36, "data");
  view.setUint32(40, 2 * count, true);
  const peak = amplitude * 32767;
  for (let i = 0; i < count; i++) {
    view.setInt16(44 + 2 * i, Math.round(peak * Math.sin((2 * Math.PI * hz * i) / rate)), true);
  }
  return bytes;
}

/** A WAV file's audio: its rate and the samples of its first channel. */
export interface Audio {
  rate: number;
  channels: number;
  /** The first channel's samples. */
  samples: Int16Array;
}

/** Reads a 16-bit PCM WAV (any rate, any number of channels); throws on anything else. */
export function parseWav(bytes: Uint8Array): Audio {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const ascii = (at: number) => String.fromCharCode(...bytes.subarray(at, at + 4));
  if (bytes.length < 12 || ascii(0) !== "RIFF" || ascii(8) !== "WAVE") throw new Error("not a WAV");
  let format: { channels: number; rate: number; bits: number; code: number } | null = null;
  for (let at = 12; at + 8 <= bytes.length;) {
    const id = ascii(at);
    const size = view.getUint32(at + 4, true);
    const body = at + 8;
    if (id === "fmt ") {
      format = {
        code: view.getUint16(body, true),
        channels: view.getUint16(body + 2, true),
        rate: view.getUint32(body + 4, true),
        bits: view.getUint16(body + 14, true),
      };
    } else if (id === "data") {
      if (!format) throw new Error("WAV data before its format");
      // 1 is PCM; 0xfffe (extensible) is PCM too when 16 bits
      if ((format.code !== 1 && format.code !== 0xfffe) || format.bits !== 16) {
        throw new Error(`not 16-bit PCM (format ${format.code}, ${format.bits} bits)`);
      }
      const frames = Math.floor(Math.min(size, bytes.length - body) / (2 * format.channels));
      const samples = new Int16Array(frames);
      for (let i = 0; i < frames; i++) {
        samples[i] = view.getInt16(body + 2 * i * format.channels, true);
      }
      return { rate: format.rate, channels: format.channels, samples };
    }
    at = body + size + (size % 2); // chunks are padded to an even size
  }
  throw new Error("WAV without data");
}

/**
 * How much of `audio`'s energy is at `hz` (Goertzel), from 0 to about 1 (a pure tone of that
 * frequency); silence answers 0.
 */
export function toneLevel(audio: Audio, hz: number): number {
  const { samples, rate } = audio;
  if (samples.length === 0) return 0;
  const coefficient = 2 * Math.cos((2 * Math.PI * hz) / rate);
  let [previous, beforePrevious, energy] = [0, 0, 0];
  for (const sample of samples) {
    const value = sample + coefficient * previous - beforePrevious;
    beforePrevious = previous;
    previous = value;
    energy += sample * sample;
  }
  if (energy === 0) return 0;
  const power = previous * previous + beforePrevious * beforePrevious -
    coefficient * previous * beforePrevious;
  return (2 * power) / (samples.length * energy);
}
