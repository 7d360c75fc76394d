/**
 * A recording proxy between svc and a real Asterisk's AMI, on 127.0.0.1: every message each side
 * sends is kept with its time, in the transcript format `tests/peers/ami_replay.ts` plays
 * (`{"t", "dir": "send"|"recv", "data"}` per line, `{"eof": true}` when Asterisk closes), so that a
 * session svc had with the real PBX can be replayed in CI, where no Asterisk runs.
 */

interface Line {
  t: number;
  dir: "send" | "recv";
  data: string;
  eof?: boolean;
}

/** Splits a stream into AMI messages: the banner line, then blocks ending with an empty line. */
class Framer {
  #buffer = "";
  #banner: boolean;

  constructor(banner: boolean) {
    this.#banner = banner;
  }

  push(text: string): string[] {
    this.#buffer += text;
    const out: string[] = [];
    if (this.#banner) {
      const end = this.#buffer.indexOf("\r\n");
      if (end < 0) return out;
      out.push(this.#buffer.slice(0, end + 2));
      this.#buffer = this.#buffer.slice(end + 2);
      this.#banner = false;
    }
    for (;;) {
      const end = this.#buffer.indexOf("\r\n\r\n");
      if (end < 0) return out;
      out.push(this.#buffer.slice(0, end + 4));
      this.#buffer = this.#buffer.slice(end + 4);
    }
  }
}

export interface AmiRecorder {
  /** Where svc connects. */
  port: number;
  /** The session so far (the last connection's), as transcript lines. */
  lines(): Line[];
  /** Starts a new transcript (the next lines are timed from now). */
  reset(): void;
  /** The transcript as its `.jsonl` text. */
  text(): string;
  close(): Promise<void>;
}

/** Listens on a free loopback port and relays each connection to `127.0.0.1:amiPort`, recording. */
export function startAmiRecorder(amiPort: number): AmiRecorder {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let lines: Line[] = [];
  let t0 = performance.now();
  const conns = new Set<Deno.Conn>();
  /** What svc sent before Asterisk's banner came: written after it, as a transcript starts. */
  let early: Line[] | null = null;
  const record = (dir: Line["dir"], data: string, eof = false) => {
    const t = Math.round(performance.now() - t0) / 1000;
    const line: Line = eof ? { t, dir, data: "", eof: true } : { t, dir, data };
    if (early && dir === "send") return early.push(line);
    lines.push(line);
    if (early && dir === "recv") {
      lines.push(...early);
      early = null;
    }
  };
  const relay = async (from: Deno.Conn, to: Deno.Conn, dir: Line["dir"]) => {
    const framer = new Framer(dir === "recv");
    const decoder = new TextDecoder();
    const buffer = new Uint8Array(65536);
    try {
      for (;;) {
        const n = await from.read(buffer);
        if (n === null) break;
        for (
          const message of framer.push(decoder.decode(buffer.subarray(0, n), { stream: true }))
        ) {
          record(dir, message);
        }
        for (let at = 0; at < n;) at += await to.write(buffer.subarray(at, n));
      }
    } catch {
      // a side closed: the other is closed below
    }
    if (dir === "recv") record("recv", "", true);
    try {
      to.close();
    } catch {
      // closed already
    }
  };
  const accepting = (async () => {
    for await (const client of listener) {
      let server: Deno.Conn;
      try {
        server = await Deno.connect({ hostname: "127.0.0.1", port: amiPort });
      } catch {
        client.close(); // Asterisk is not there (yet): svc tries again, as with Asterisk itself
        continue;
      }
      conns.add(client);
      conns.add(server);
      lines = [];
      early = [];
      t0 = performance.now();
      Promise.all([relay(client, server, "send"), relay(server, client, "recv")]).finally(() => {
        conns.delete(client);
        conns.delete(server);
      });
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    lines: () => lines,
    reset() {
      lines = [];
      t0 = performance.now();
    },
    text: () => lines.map((line) => JSON.stringify(line)).join("\n") + "\n",
    async close() {
      listener.close();
      for (const conn of conns) {
        try {
          conn.close();
        } catch {
          // closed already
        }
      }
      await accepting;
    },
  };
}
