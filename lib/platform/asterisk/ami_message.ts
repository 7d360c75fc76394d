/**
 * AMI (Asterisk Manager Interface) messages: the header list of one message, the serialisation of
 * an action, and a streaming parser for what Asterisk sends (framing as observed in the recorded
 * sessions of `tests/peers/asterisk_transcripts/`: a banner line, then messages ending with an
 * empty line, lines ending with CRLF, a value may hold a bare LF, keys may repeat).
 */

/** One AMI message: its `Key: Value` lines in order (keys may repeat, values may be empty). */
export class AmiMessage {
  constructor(readonly headers: [string, string][]) {}

  /**
   * The first value of `key`; exact spelling first, then any case (`ActionID`/`ActionId`).
   *
   * @example
   * new AmiMessage([["Event", "Hangup"], ["Cause", "16"]]).get("Cause"); // "16"
   */
  get(key: string): string | undefined {
    const headers = this.headers;
    for (let i = 0; i < headers.length; i++) {
      const header = headers[i]!;
      if (header[0] === key) return header[1];
    }
    const lower = key.toLowerCase();
    for (let i = 0; i < headers.length; i++) {
      const header = headers[i]!;
      if (header[0].length === key.length && header[0].toLowerCase() === lower) return header[1];
    }
    return undefined;
  }

  /** Every value of `key` in order (exact spelling), e.g. each `ChanVariable` or `Output`. */
  all(key: string): string[] {
    const values: string[] = [];
    for (const [k, v] of this.headers) if (k === key) values.push(v);
    return values;
  }

  /** True when some header is named `key` (any case). */
  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** `Event:`, or undefined for a response. */
  get event(): string | undefined {
    const first = this.headers[0];
    // Asterisk puts `Event:` first; look further only for a hand-made message
    return first !== undefined && first[0] === "Event" ? first[1] : this.get("Event");
  }

  /** `Response:` (Success, Error, Goodbye…), or undefined for an event. */
  get response(): string | undefined {
    const first = this.headers[0];
    return first !== undefined && first[0] === "Response" ? first[1] : this.get("Response");
  }

  /** `ActionID:` wherever it sits (its position varies between events). */
  get actionId(): string | undefined {
    return this.get("ActionID");
  }

  /** The message as sent on the wire: `Key: Value\r\n` per header, then `\r\n`. */
  format(): string {
    let text = "";
    for (const [key, value] of this.headers) text += `${key}: ${value}\r\n`;
    return text + "\r\n";
  }

  toString(): string {
    return this.format();
  }
}

/**
 * Serialises an action; array values become repeated keys (several `Variable:`), undefined ones
 * are left out. Throws on CR or LF anywhere (a value could otherwise inject headers or actions).
 *
 * @example
 * formatAction("Originate", { Channel: "PJSIP/alice", Variable: ["a=1", "b=2"] }, "svc-1");
 * // "Action: Originate\r\nActionID: svc-1\r\nChannel: PJSIP/alice\r\nVariable: a=1\r\n…\r\n"
 */
export function formatAction(
  action: string,
  fields: Record<string, string | string[] | undefined>,
  actionId: string,
): string {
  let text = `Action: ${_checked("Action", action)}\r\nActionID: ${
    _checked("ActionID", actionId)
  }\r\n`;
  for (const key in fields) {
    const value = fields[key];
    if (value === undefined) continue;
    if (key === "" || /[\r\n:]/.test(key)) {
      throw new TypeError(`AMI field name ${JSON.stringify(key)}`);
    }
    const lower = key.toLowerCase();
    if (lower === "action" || lower === "actionid") {
      throw new TypeError(`AMI field ${key} is set by formatAction`);
    }
    if (typeof value === "string") text += `${key}: ${_checked(key, value)}\r\n`;
    else for (const item of value) text += `${key}: ${_checked(key, item)}\r\n`;
  }
  return text + "\r\n";
}

function _checked(key: string, value: string): string {
  if (value.includes("\r") || value.includes("\n")) {
    throw new TypeError(`AMI field ${key} holds a CR or LF`);
  }
  return value;
}

export interface AmiParserOptions {
  /**
   * Whether the stream starts with Asterisk's banner line (`Asterisk Call Manager/11.0.0\r\n`);
   * true for what Asterisk sends, false for what a client sends. A first line holding `: ` is
   * taken as a header all the same.
   */
  banner?: boolean;
  /** Largest message kept (characters); a longer one is dropped up to its end. 1 MiB by default. */
  maxMessage?: number;
  /** Told about every skipped line and dropped message; the parser itself never throws on input. */
  onGarbage?: (reason: string) => void;
}

const END = "\r\n\r\n";

/**
 * Streaming AMI parser: push chunks cut anywhere, get the complete messages.
 *
 * @example
 * const parser = new AmiParser();
 * parser.push("Asterisk Call Manager/11.0.0\r\nEvent: Ping\r\n\r\n"); // [AmiMessage]
 * parser.banner; // "Asterisk Call Manager/11.0.0"
 */
export class AmiParser {
  /** The banner line without its CRLF, once read. */
  banner: string | undefined;
  /** Lines skipped and messages dropped so far. */
  garbage = 0;
  #decoder = new TextDecoder("utf-8", { fatal: false });
  #buffer = "";
  /** Where to look for the next END in `#buffer` (what came before holds none). */
  #scanFrom = 0;
  #expectBanner: boolean;
  /** Dropping an oversized message until its END. */
  #skipping = false;
  #max: number;
  #onGarbage: ((reason: string) => void) | undefined;

  constructor(options: AmiParserOptions = {}) {
    this.#expectBanner = options.banner ?? true;
    this.#max = options.maxMessage ?? 1024 * 1024;
    this.#onGarbage = options.onGarbage;
  }

  /** Adds a chunk (bytes, decoded as UTF-8 across chunk cuts, or text); answers whole messages. */
  push(chunk: Uint8Array | string): AmiMessage[] {
    const text = typeof chunk === "string" ? chunk : this.#decoder.decode(chunk, { stream: true });
    const messages: AmiMessage[] = [];
    if (text === "") return messages;
    let buffer = this.#buffer === "" ? text : this.#buffer + text;
    let pos = 0;
    let scan = this.#scanFrom;

    if (this.#expectBanner) {
      const eol = buffer.indexOf("\r\n");
      if (eol < 0) {
        if (buffer.length <= this.#max) {
          this.#buffer = buffer;
          return messages;
        }
        this.#expectBanner = false;
        this.#report(`no banner line in the first ${this.#max} characters`);
      } else {
        this.#expectBanner = false;
        const line = buffer.slice(0, eol);
        if (!line.includes(": ")) {
          this.banner = line;
          pos = eol + 2;
        }
      }
      scan = pos;
    }

    for (;;) {
      const end = buffer.indexOf(END, scan);
      if (end < 0) break;
      if (this.#skipping) this.#skipping = false;
      else if (end - pos > this.#max) {
        this.#report(`message longer than ${this.#max} characters dropped`);
      } else if (end > pos) this.#parse(buffer, pos, end, messages);
      pos = end + 4;
      scan = pos;
    }

    const rest = buffer.length - pos;
    if (rest > this.#max || (this.#skipping && rest > 3)) {
      if (!this.#skipping) {
        this.#skipping = true;
        this.#report(`message longer than ${this.#max} characters dropped`);
      }
      // keep what could start an END cut by the chunk boundary
      pos = buffer.length - 3;
    }
    if (pos >= buffer.length) {
      this.#buffer = "";
      this.#scanFrom = 0;
    } else {
      buffer = pos === 0 ? buffer : buffer.slice(pos);
      this.#buffer = buffer;
      this.#scanFrom = buffer.length > 3 ? buffer.length - 3 : 0;
    }
    return messages;
  }

  /** Parses the lines of `buffer[start, end)` (one message without its END). */
  #parse(buffer: string, start: number, end: number, into: AmiMessage[]): void {
    const headers: [string, string][] = [];
    let pos = start;
    // the next ": " at or after `pos`, reused while it lies beyond the current line, so that
    // lines without a colon do not make the scan quadratic
    let colon = -1;
    while (pos <= end) {
      let eol = buffer.indexOf("\r\n", pos);
      if (eol < 0 || eol > end) eol = end;
      if (colon < pos) colon = buffer.indexOf(": ", pos);
      if (colon > pos && colon < eol) {
        headers.push([buffer.slice(pos, colon), buffer.slice(colon + 2, eol)]);
      } else if (eol > pos + 1 && buffer.charCodeAt(eol - 1) === 58 /* ":" */) {
        headers.push([buffer.slice(pos, eol - 1), ""]);
      } else if (eol > pos) {
        this.#report(
          `line without "key: value": ${
            JSON.stringify(buffer.slice(pos, Math.min(eol, pos + 80)))
          }`,
        );
      }
      pos = eol + 2;
    }
    if (headers.length > 0) into.push(new AmiMessage(headers));
  }

  #report(reason: string): void {
    this.garbage++;
    this.#onGarbage?.(reason);
  }
}
