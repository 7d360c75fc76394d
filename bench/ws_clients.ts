/**
 * The client process of the CTI socket part of `deno task bench`: holds many WebSockets (Deno's
 * built-in client) so that the server's memory is measured alone, and times fan-outs from its own
 * clock (the request that causes an event and the event's arrivals are timed in one process).
 *
 * Driven by JSON lines on stdin, each answered by one JSON line on stdout (`{"error": …}` when it
 * failed):
 * - `{"open": {url, count, group, greeting}}`: opens `count` sockets to `url`, 100 at a time, each
 *   done once open and sent `greeting` messages; answers `{opened, ms}`.
 * - `{"fanout": {group, requests, match, gapMs, timeoutMs}}`: for each request in turn (`{url,
 *   method, headers, body}`, one every `gapMs`), takes the time, sends it, and waits until every
 *   socket of `group` got a text message containing `match`; answers `{samples, requestMs}`: each
 *   socket's delay (ms) from the request's start, every round together, and each request's own
 *   time.
 * - `{"close": true}`: closes every socket, answers `{closed}` and exits.
 */

interface Open {
  url: string;
  count: number;
  group: string;
  greeting: number;
}

interface Fanout {
  group: string;
  requests: { url: string; method?: string; headers?: Record<string, string>; body?: string }[];
  match: string;
  gapMs: number;
  timeoutMs: number;
}

/** One socket, its group, and when its event came in the current fan-out round (NaN: not yet). */
interface Client {
  socket: WebSocket;
  group: Client[];
  arrived: number;
}

const groups = new Map<string, Client[]>();
/** The fan-out being measured: its group, what marks its event, when its request started. */
let measuring: { clients: Client[]; match: string; started: number; waiting: number } | null = null;
let onAllArrived: (() => void) | null = null;
let closedEarly = 0;
let closing = false;

function openOne(url: string, greeting: number, group: Client[]): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const client: Client = { socket, group, arrived: NaN };
    let received = 0;
    let done = false;
    const timer = setTimeout(() => fail(new Error(`${url}: not open within 30 s`)), 30_000);
    function fail(error: Error) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      reject(error);
    }
    function ready() {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(client);
    }
    socket.onopen = () => {
      if (greeting === 0) ready();
    };
    socket.onmessage = (event) => {
      if (++received === greeting) ready();
      const round = measuring;
      if (
        round && Number.isNaN(client.arrived) && typeof event.data === "string" &&
        round.clients === group && event.data.includes(round.match)
      ) {
        client.arrived = performance.now() - round.started;
        if (--round.waiting === 0) onAllArrived?.();
      }
    };
    socket.onerror = () => fail(new Error(`${url}: socket error before it was ready`));
    socket.onclose = (event) => {
      fail(new Error(`${url}: closed (${event.code} ${event.reason}) before it was ready`));
      if (done && !closing) closedEarly++;
    };
  });
}

async function open({ url, count, group, greeting }: Open) {
  const started = performance.now();
  let clients = groups.get(group);
  if (!clients) groups.set(group, clients = []);
  const members = clients;
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      members.push(await openOne(url, greeting, members));
    }
  };
  await Promise.all(Array.from({ length: Math.min(100, count) }, worker));
  return { opened: count, ms: performance.now() - started };
}

async function fanout({ group, requests, match, gapMs, timeoutMs }: Fanout) {
  const clients = groups.get(group);
  if (!clients?.length) throw new Error(`no sockets in group ${group}`);
  const samples: number[] = [];
  const requestMs: number[] = [];
  for (const request of requests) {
    for (const client of clients) client.arrived = NaN;
    const { promise, resolve } = Promise.withResolvers<void>();
    onAllArrived = resolve;
    const started = performance.now();
    measuring = { clients, match, started, waiting: clients.length };
    const response = await fetch(request.url, {
      method: request.method,
      headers: request.headers,
      body: request.body,
      signal: AbortSignal.timeout(timeoutMs),
    });
    requestMs.push(performance.now() - started);
    const text = await response.text();
    if (!response.ok) throw new Error(`${request.url}: ${response.status} ${text.slice(0, 300)}`);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<void>((resolveTimeout) => {
      timer = setTimeout(resolveTimeout, timeoutMs);
    });
    await Promise.race([promise, timedOut]);
    clearTimeout(timer);
    const missing = measuring.waiting;
    measuring = null;
    onAllArrived = null;
    if (missing > 0) {
      throw new Error(
        `${missing} of ${clients.length} sockets got no event within ${timeoutMs} ms`,
      );
    }
    for (const client of clients) samples.push(client.arrived);
    const wait = Math.max(50, started + gapMs - performance.now()); // 50 ms at least: it settles
    await new Promise((resolveLater) => setTimeout(resolveLater, wait));
  }
  return { samples, requestMs, closedEarly };
}

async function close() {
  closing = true;
  let closed = 0;
  const all = [...groups.values()].flat();
  await Promise.all(all.map(({ socket }) =>
    new Promise<void>((resolve) => {
      if (socket.readyState === WebSocket.CLOSED) return resolve();
      const timer = setTimeout(resolve, 5000);
      socket.onclose = () => {
        clearTimeout(timer);
        closed++;
        resolve();
      };
      socket.close(1000);
    })
  ));
  return { closed, closedEarly };
}

const encoder = new TextEncoder();
const reply = (value: unknown) => Deno.stdout.write(encoder.encode(JSON.stringify(value) + "\n"));

let buffered = "";
for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
  buffered += chunk;
  let end;
  while ((end = buffered.indexOf("\n")) >= 0) {
    const line = buffered.slice(0, end);
    buffered = buffered.slice(end + 1);
    if (line.trim() === "") continue;
    const command = JSON.parse(line);
    try {
      if (command.open) await reply(await open(command.open));
      else if (command.fanout) await reply(await fanout(command.fanout));
      else if (command.close) {
        await reply(await close());
        Deno.exit(0);
      } else throw new Error(`unknown command ${line}`);
    } catch (error) {
      await reply({ error: error instanceof Error ? error.message : String(error) });
    }
  }
}
