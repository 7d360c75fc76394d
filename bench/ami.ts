/**
 * AMI parser throughput: the recv streams of every recorded Asterisk session
 * (`tests/peers/asterisk_transcripts/`, banners left out) concatenated and repeated to about
 * 200,000 messages, fed to `AmiParser` in 64 KiB chunks. The baseline, measured in the same run
 * over the same chunks, only decodes them and counts message ends with `indexOf`.
 *
 * Run alone: `deno run -A bench/ami.ts`.
 */
import { AmiParser } from "../lib/platform/asterisk/ami_message.ts";

const transcripts = new URL("../tests/peers/asterisk_transcripts/", import.meta.url);

/** The recorded messages of every transcript (banners left out), in file order. */
async function recordedMessages(): Promise<string[]> {
  const names = [];
  for await (const entry of Deno.readDir(transcripts)) {
    if (entry.name.endsWith(".jsonl")) names.push(entry.name);
  }
  const messages: string[] = [];
  for (const name of names.sort()) {
    const lines = (await Deno.readTextFile(new URL(name, transcripts))).split("\n");
    for (const line of lines) {
      if (line === "") continue;
      const record = JSON.parse(line) as { dir: string; data: string };
      if (record.dir === "recv" && record.data.endsWith("\r\n\r\n")) messages.push(record.data);
    }
  }
  return messages;
}

/** Messages/s of the parser and of the bare baseline on `messages` repeated to about `target`. */
function measure(label: string, messages: string[], target: number) {
  const copies = Math.ceil(target / messages.length);
  const bytes = new TextEncoder().encode(messages.join("").repeat(copies));
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += 65536) chunks.push(bytes.subarray(at, at + 65536));
  const count = messages.length * copies;

  const baseline = () => {
    const decoder = new TextDecoder();
    let found = 0;
    let rest = "";
    for (const chunk of chunks) {
      const buffer = rest + decoder.decode(chunk, { stream: true });
      let pos = 0;
      for (let end; (end = buffer.indexOf("\r\n\r\n", pos)) >= 0; pos = end + 4) found++;
      rest = buffer.slice(pos);
    }
    return found;
  };
  const parser = () => {
    const amiParser = new AmiParser({ banner: false });
    let found = 0;
    for (const chunk of chunks) found += amiParser.push(chunk).length;
    return found;
  };

  const results: { name: string; count: number; ms: number; bytes: number }[] = [];
  const runs = [[`${label}: decode + split (baseline)`, baseline], [`${label}: AmiParser`, parser]];
  for (const [name, run] of runs as [string, () => number][]) {
    run(); // warm up
    let best = Infinity;
    for (let round = 0; round < 5; round++) {
      const started = performance.now();
      const found = run();
      best = Math.min(best, performance.now() - started);
      if (found !== count) throw new Error(`${name}: ${found} messages, expected ${count}`);
    }
    results.push({ name, count, ms: best, bytes: bytes.length });
  }
  return results;
}

/**
 * Messages/s of `AmiParser` next to the baseline: on every recorded message, and on the channel
 * events alone (`Privilege: call`, 15 headers or more: the bulk of a busy PBX's stream).
 */
export async function amiParserBench(
  target = 200_000,
): Promise<{ name: string; count: number; ms: number; bytes: number }[]> {
  const messages = await recordedMessages();
  const channelEvents = messages.filter((m) =>
    m.includes("\r\nPrivilege: call,") && m.split("\r\n").length >= 17
  );
  return [
    ...measure("all recorded messages", messages, target),
    ...measure("channel events", channelEvents, target),
  ];
}

if (import.meta.main) {
  for (const { name, count, ms, bytes } of await amiParserBench()) {
    const rate = Math.round(count / (ms / 1000)).toLocaleString("en");
    const size = Math.round(bytes / count);
    console.log(
      `${name.padEnd(50)} ${count} × ${size} B in ${ms.toFixed(0)} ms: ${rate} messages/s`,
    );
  }
}
