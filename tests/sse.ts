/** Reading a Server-Sent Events answer in tests (the event stream, `GET /events/stream`). */

export interface SseEvent {
  id: string;
  event: string;
  data: { username: string; message: Record<string, unknown> };
}

/** Reads SSE events from a streamed answer as they come. */
export class SseReader {
  readonly events: SseEvent[] = [];
  #buffer = "";
  #reader: ReadableStreamDefaultReader<string> | null = null;

  constructor(readonly response: Response) {}

  /** The raw body, for a test that reads it otherwise. */
  get body(): ReadableStream<Uint8Array> {
    return this.response.body!;
  }

  /** Reads until `count` events came (within 5 s). */
  async take(count: number): Promise<SseEvent[]> {
    const deadline = Date.now() + 5_000;
    while (this.events.length < count) {
      if (Date.now() > deadline) throw new Error(`only ${this.events.length} events`);
      this.#reader ??= this.response.body!.pipeThrough(new TextDecoderStream()).getReader();
      const { value, done } = await this.#reader.read();
      if (done) throw new Error("stream ended");
      this.#buffer += value;
      let end;
      while ((end = this.#buffer.indexOf("\n\n")) >= 0) {
        const block = this.#buffer.slice(0, end);
        this.#buffer = this.#buffer.slice(end + 2);
        const fields = Object.fromEntries(
          block.split("\n").filter((line) => line && !line.startsWith(":")).map((line) => {
            const colon = line.indexOf(": ");
            return [line.slice(0, colon), line.slice(colon + 2)];
          }),
        );
        if (fields.data !== undefined) {
          this.events.push({
            id: fields.id ?? "",
            event: fields.event ?? "",
            data: JSON.parse(fields.data),
          });
        }
      }
    }
    return this.events.slice(0, count);
  }

  cancel = () => this.#reader ? this.#reader.cancel() : this.response.body!.cancel();
}
