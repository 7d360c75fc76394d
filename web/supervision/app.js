// The supervisor's wallboard (docs/supervision.md, "The page"): signs in through the 2.0 API,
// then follows the queues and the agents over the CTI WebSocket (no polling), reconnecting by
// itself and renewing its token; each queue's day, its curve, comes from the REST API. The
// board's logic is in model.js.
import {
  agentQueues,
  agentRow,
  apply,
  backoff,
  casLoginUrl,
  casReturn,
  clockOffset,
  createBoard,
  curvePlan,
  DEFAULT_THRESHOLDS,
  duration,
  membershipCommands,
  queueTile,
  readThresholds,
  renewalAt,
} from "./model.js";

const API = "/svc/api/2.0";
const TOKEN_KEY = "svc.supervision.session";
const THRESHOLDS_KEY = "svc.supervision.thresholds";
/** A ping this often; a socket silent this long is taken for dead (as xuc's cti.js does). */
const PING_MS = 5_000;
const SILENCE_MS = 15_000;
/** A queue's curve is asked again at most this often, and every minute at least. */
const CURVE_AGAIN_MS = 5_000;
const CURVE_EVERY_MS = 60_000;
/** The TV view's address: `/supervision?view=tv`. */
const VIEW_PARAMETER = "view";
/** The commands a plain CTI user is refused: the account is no supervisor's. */
const SUPERVISOR_COMMANDS = new Set([
  "subscribeToQueueStats",
  "subscribeToAgentStats",
  "getList",
  "subscribeToQueueCalls",
]);

/** @param {string} id */
const byId = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** Single sign-on set up on the server: `{cas: url | null, kerberos: boolean}`. */
const sso = JSON.parse(document.body.dataset.sso || "{}");

let board = createBoard();
let thresholds = readThresholds(localStorage.getItem(THRESHOLDS_KEY));
/** @type {{ login: string, token: string, ttl: number, at: number } | null} */
let session = null;
/** The server's clock less the page's (ms). */
let offset = 0;
/** @type {Connection | null} the socket the board follows */
let connection = null;
/** @type {Connection | null} a socket opening to replace it (or to be the first) */
let opening = null;
let attempt = 0;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let reconnectTimer;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let renewTimer;
/** @type {ReturnType<typeof setInterval> | undefined} */
let countdown;

// --- the server ----------------------------------------------------------------------------

class HttpError extends Error {
  /** @param {number} status @param {string} message */
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/**
 * Calls the 2.0 API; answers its JSON, or throws an {@link HttpError} (status 0: unreachable).
 *
 * @param {string} path
 * @param {RequestInit} init
 */
async function call(path, init = {}) {
  let response;
  try {
    response = await fetch(`${API}${path}`, { credentials: "same-origin", ...init });
  } catch {
    throw new HttpError(0, "the server cannot be reached");
  }
  const measured = clockOffset(response.headers.get("date"), Date.now());
  if (measured !== offset) {
    offset = measured;
    showClock(); // the server's time at once, not at the next second
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const wait = response.headers.get("retry-after");
    const message = body.message ?? `${response.status}`;
    throw new HttpError(response.status, wait ? `${message} (wait ${wait} s)` : message);
  }
  return body;
}

/** Keeps a token the server gave: `{login, token, TTL}`. */
function keep(/** @type {{ login: string, token: string, TTL: number }} */ answer) {
  session = { login: answer.login, token: answer.token, ttl: answer.TTL, at: Date.now() };
  sessionStorage.setItem(TOKEN_KEY, JSON.stringify(session));
  clearTimeout(renewTimer);
  renewTimer = setTimeout(renew, renewalAt(session.at, session.ttl) - Date.now());
}

/** A new token for the one kept (`GET /auth/check`). */
async function check() {
  if (!session) throw new HttpError(401, "not signed in");
  keep(await call("/auth/check", { headers: { Authorization: `Bearer ${session.token}` } }));
}

/** The token is renewed before it expires, and a new socket opened with it. */
async function renew() {
  try {
    await check();
    if (connection) connect(); // else a reconnection is on its way, with this token
  } catch (error) {
    if (error instanceof HttpError && error.status >= 400 && error.status < 500) {
      signOut("Your session ended: sign in again.");
    } else {
      renewTimer = setTimeout(renew, 10_000); // the server is away: try again
    }
  }
}

// --- the socket ----------------------------------------------------------------------------

/** One CTI socket; a new one replaces the old once greeted (token renewal, reconnection). */
class Connection {
  /** @param {string} token */
  constructor(token) {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    this.socket = new WebSocket(
      `${scheme}//${location.host}${API}/cti?token=${encodeURIComponent(token)}`,
    );
    this.retired = false;
    /** Whether the greeting's `RightProfile` came. */
    this.rightsSeen = false;
    this.heard = Date.now();
    /** @type {Set<number>} queues whose calls this socket follows */
    this.following = new Set();
    this.socket.onmessage = (event) => this.#receive(JSON.parse(event.data));
    this.socket.onclose = (event) => {
      clearInterval(this.pinger);
      if (opening === this) opening = null;
      if (!this.retired && connection === this) {
        connection = null;
        lost(event.code); // a replacement that failed: the current one goes on
      }
    };
    this.pinger = setInterval(() => {
      if (Date.now() - this.heard > SILENCE_MS) this.socket.close(4000, "silent");
      else this.send({ claz: "ping" });
    }, PING_MS);
  }

  /** @param {object} message */
  send(message) {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  /** @param {string} command @param {object} fields */
  web(command, fields = {}) {
    this.send({ claz: "web", command, ...fields });
  }

  /** Closes it without reconnecting. */
  retire() {
    this.retired = true;
    clearInterval(this.pinger);
    this.socket.close(1000, "replaced");
  }

  /** @param {{ msgType: string, ctiMessage: any }} message */
  #receive(message) {
    if (this.retired) return;
    this.heard = Date.now();
    if (message.msgType === "LoggedOn") return this.#greeted();
    if (message.msgType === "Error") return refused(message.ctiMessage);
    if (message.msgType === "RightProfile") return this.#rights(message.ctiMessage.profile);
    const changed = apply(board, message, Date.now());
    if (message.msgType === "QueueList" || message.msgType === "QueueConfig") {
      for (const id of board.queues.keys()) {
        if (this.following.has(id)) continue;
        this.following.add(id);
        this.web("subscribeToQueueCalls", { queueId: id });
        curveSoon(id);
      }
    }
    // the day's counts moved: its curve may have
    if (message.msgType === "QueueStatistics") curveSoon(message.ctiMessage.queueId);
    if (changed) render();
  }

  /**
   * The user's rights profile: sent after the greeting, and again when it changes. Without one
   * the user is no supervisor; a change builds the board again from a new socket, which is sent
   * what the new profile covers.
   * @param {string} profile
   */
  #rights(profile) {
    if (profile === "NoRight") return signOut(noSupervisor());
    // the first comes with the greeting; a later one is a change
    if (this.rightsSeen && connection === this) connect();
    this.rightsSeen = true;
  }

  /** The lists first (names), then the figures; the old socket, if any, goes. */
  #greeted() {
    if (connection && connection !== this) connection.retire();
    connection = this;
    if (opening === this) opening = null;
    attempt = 0;
    clearTimeout(reconnectTimer);
    clearInterval(countdown);
    this.web("getList", { objectType: "queue" });
    this.web("getList", { objectType: "agent" });
    this.web("getList", { objectType: "queuemember" });
    this.web("subscribeToQueueStats");
    this.web("subscribeToAgentStats");
    status("live", "Live");
  }
}

/**
 * Opens a socket with the kept token: the board's socket, when there is none; else its
 * replacement, which takes over once greeted.
 */
function connect() {
  if (!session) return;
  opening?.retire();
  const socket = new Connection(session.token);
  if (connection) opening = socket;
  else connection = socket;
}

/**
 * The board's socket closed by itself (`code`; 0: the server could not be reached): a new one
 * after a while, with a renewed token.
 */
function lost(/** @type {number} */ code) {
  const wait = backoff(attempt++);
  const until = Date.now() + wait;
  const tell = () =>
    status(
      "reconnecting",
      `Connection lost${code === 4001 ? " (token expired)" : ""}: ` +
        `reconnecting in ${Math.max(1, Math.ceil((until - Date.now()) / 1000))} s`,
    );
  tell();
  clearInterval(countdown);
  countdown = setInterval(tell, 1000);
  clearTimeout(reconnectTimer);
  reconnectTimer = setTimeout(reconnect, wait);
}

async function reconnect() {
  clearInterval(countdown);
  status("reconnecting", "Reconnecting…");
  try {
    await check();
  } catch (error) {
    if (error instanceof HttpError && error.status >= 400 && error.status < 500) {
      return signOut("Your session ended: sign in again.");
    }
    return lost(0);
  }
  connect();
}

/** What the page says of a user without a supervisor's rights profile. */
const noSupervisor = () =>
  `${session?.login ?? "This user"} has no supervisor rights profile: sign in as a supervisor.`;

/** An `Error` of the channel. @param {{ error: string, message: string, command?: string }} error */
function refused(error) {
  if (error.error === "Forbidden" && SUPERVISOR_COMMANDS.has(error.command ?? "")) {
    return signOut(noSupervisor());
  }
  notice(`${error.command ?? "The server"}: ${error.message}`);
}

// --- signing in and out --------------------------------------------------------------------

async function start() {
  setView(new URLSearchParams(location.search).get(VIEW_PARAMETER) === "tv");
  tick();
  setInterval(tick, 1000);
  const { service, ticket } = casReturn(location.href);
  if (ticket && sso.cas) {
    history.replaceState(null, "", service);
    return await signIn(() =>
      call(`/auth/cas?service=${encodeURIComponent(service)}&ticket=${encodeURIComponent(ticket)}`)
    );
  }
  const kept = sessionStorage.getItem(TOKEN_KEY);
  if (kept) {
    try {
      session = JSON.parse(kept);
      await check();
      return showBoard();
    } catch {
      session = null;
      sessionStorage.removeItem(TOKEN_KEY);
    }
  }
  showSignIn("");
}

/** Signs in with what `getToken` answers (`{login, token, TTL}`). */
async function signIn(/** @type {() => Promise<any>} */ getToken) {
  const button = /** @type {HTMLButtonElement} */ (byId("sign-in-button"));
  button.disabled = true;
  byId("sign-in-error").textContent = "";
  try {
    keep(await getToken());
    showBoard();
  } catch (error) {
    const status = error instanceof HttpError ? error.status : 0;
    showSignIn(
      status === 401
        ? "Wrong login or password, or no such CTI user."
        : `Could not sign in: ${error instanceof Error ? error.message : error}`,
    );
  } finally {
    button.disabled = false;
  }
}

function showBoard() {
  byId("sign-in").hidden = true;
  byId("board").hidden = false;
  byId("bar-actions").hidden = false;
  byId("who").textContent = session?.login ?? "";
  status("connecting", "Connecting…");
  connect();
}

/** @param {string} message */
function showSignIn(message) {
  byId("board").hidden = true;
  byId("bar-actions").hidden = true;
  byId("sign-in").hidden = false;
  byId("sso").hidden = !sso.cas && !sso.kerberos;
  byId("sso-cas").hidden = !sso.cas;
  byId("sso-kerberos").hidden = !sso.kerberos;
  byId("sign-in-error").textContent = message;
  status("signed-out", "Signed out");
  /** @type {HTMLInputElement} */ (byId("login")).focus();
}

/** @param {string} message */
function signOut(message = "") {
  clearTimeout(renewTimer);
  clearTimeout(reconnectTimer);
  clearInterval(countdown);
  for (const socket of [connection, opening]) socket?.retire();
  connection = opening = null;
  session = null;
  sessionStorage.removeItem(TOKEN_KEY);
  board = createBoard();
  for (const part of [byId("tiles"), byId("calls"), byId("agents").querySelector("tbody")]) {
    part?.replaceChildren();
  }
  rows.clear();
  plots.disconnect();
  tiles.clear();
  forgetCurves();
  showSignIn(message);
}

byId("sign-in-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = new FormData(/** @type {HTMLFormElement} */ (event.target));
  signIn(() =>
    call("/auth/login", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ login: form.get("login"), password: form.get("password") }),
    })
  );
});
byId("sso-kerberos").addEventListener("click", () => signIn(() => call("/auth/sso")));
byId("sso-cas").addEventListener("click", () => {
  location.assign(casLoginUrl(sso.cas, casReturn(location.href).service));
});
byId("sign-out").addEventListener("click", () => signOut());

// --- the TV view and full screen -------------------------------------------------------------

/** Whether the TV view is on: the queues alone, filling the screen (`?view=tv`). */
const tvView = () => document.body.dataset.view === "tv";

/** Turns the TV view on or off, and the page's address with it (a reload keeps it). */
function setView(/** @type {boolean} */ tv) {
  document.body.dataset.view = tv ? "tv" : "desk";
  const button = byId("view-button");
  text(button, tv ? "Desk view" : "TV view");
  data(button, "aria-pressed", String(tv));
  const url = new URL(location.href);
  if (tv) url.searchParams.set(VIEW_PARAMETER, "tv");
  else url.searchParams.delete(VIEW_PARAMETER);
  if (url.href !== location.href) history.replaceState(null, "", url);
  render();
}

/**
 * Full screen, in the TV view; where the browser does not allow it (no Fullscreen API, a frame,
 * a refusal), the TV view alone and a word on the browser's own full-screen key.
 */
async function toggleFullScreen() {
  if (document.fullscreenElement) {
    await document.exitFullscreen().catch(() => {});
    return;
  }
  setView(true);
  try {
    if (!document.fullscreenEnabled) throw new Error("not allowed");
    await document.documentElement.requestFullscreen({ navigationUI: "hide" });
  } catch {
    document.body.dataset.fullscreen = "refused";
    notice("This browser does not allow full screen here: use its own full-screen key (F11).");
  }
}

function fullScreenChanged() {
  const on = document.fullscreenElement !== null;
  if (on) delete document.body.dataset.fullscreen;
  const button = byId("fullscreen-button");
  text(button, on ? "Leave full screen" : "Full screen");
  data(button, "aria-pressed", String(on));
}

byId("view-button").addEventListener("click", () => setView(!tvView()));
byId("fullscreen-button").addEventListener("click", () => toggleFullScreen());
document.addEventListener("fullscreenchange", fullScreenChanged);

// --- drawing -------------------------------------------------------------------------------

/**
 * An element with attributes (`on…` functions become listeners) and children.
 *
 * @param {string} tag
 * @param {Record<string, any>} attributes
 * @param {(Node | string)[]} children
 */
function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (value !== false && value !== null && value !== undefined) {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  element.append(...children);
  return element;
}

/** Sets a text only when it changed (no needless layout). @param {Element} element */
function text(element, /** @type {string} */ value) {
  if (element.textContent !== value) element.textContent = value;
}

/** @param {Element} element @param {string} name @param {string} value */
function data(element, name, value) {
  if (element.getAttribute(name) !== value) element.setAttribute(name, value);
}

/** @param {string} kind @param {string} message */
function status(kind, message) {
  const element = byId("status");
  data(element, "data-status", kind);
  text(element, message);
}

/** @param {string} message */
function notice(message) {
  const element = byId("notice");
  element.textContent = message;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => (element.textContent = ""), 8_000);
}
/** @type {ReturnType<typeof setTimeout> | undefined} */
let noticeTimer;

let drawing = false;
/** Draws the board soon, once for the messages that came meanwhile. */
function render() {
  if (drawing) return;
  drawing = true;
  setTimeout(() => {
    drawing = false;
    draw();
  }, 0);
}

function showClock() {
  text(byId("clock"), new Date(Date.now() + offset).toLocaleTimeString([], { hour12: false }));
}

function tick() {
  showClock();
  if (!byId("board").hidden) draw();
}

const queueName = (/** @type {{ displayName: string, name: string }} */ queue) =>
  queue.displayName || queue.name;
const agentName = (/** @type {import("./model.js").Agent} */ agent) =>
  [agent.firstName, agent.lastName].filter(Boolean).join(" ");

function draw() {
  const now = Date.now();
  drawTiles(now);
  drawAgents(now);
  drawCalls(now);
  const waiting = [...board.queues.values()].reduce(
    (sum, queue) => sum + (queue.calls?.length ?? 0),
    0,
  );
  document.title = waiting ? `(${waiting}) Supervision` : "Supervision";
}

/** The figures of a tile: name, label, how it is written. */
const FIGURES = [
  ["waiting", "Waiting", (/** @type {any} */ t) => String(t.waiting)],
  ["longestWait", "Longest wait", (/** @type {any} */ t) => duration(t.longestWait)],
  [
    "serviceLevel",
    "Service level",
    (/** @type {any} */ t) => t.serviceLevel === null ? "–" : `${t.serviceLevel}%`,
  ],
  ["answered", "Answered", (/** @type {any} */ t) => String(t.answered)],
  ["abandoned", "Abandoned", (/** @type {any} */ t) => String(t.abandoned)],
  ["ready", "Ready", (/** @type {any} */ t) => String(t.ready)],
  ["busy", "Busy", (/** @type {any} */ t) => String(t.busy)],
  ["paused", "Paused", (/** @type {any} */ t) => String(t.paused)],
];

/** @type {Map<number, { root: HTMLElement, title: HTMLElement, number: HTMLElement, values: Map<string, HTMLElement>, plot: HTMLElement }>} */
const tiles = new Map();

/** The TV view's grid for `count` tiles: columns, and as few rows as they need. */
function tileGrid(/** @type {number} */ count) {
  const columns = Math.max(1, Math.ceil(Math.sqrt(count)));
  return { columns, rows: Math.max(1, Math.ceil(count / columns)) };
}

function drawTiles(/** @type {number} */ now) {
  const container = byId("tiles");
  const queues = [...board.queues.values()].sort((a, b) => a.id - b.id);
  const grid = tileGrid(queues.length);
  container.style.setProperty("--columns", String(grid.columns));
  container.style.setProperty("--rows", String(grid.rows));
  for (const [id, tile] of tiles) {
    if (!board.queues.has(id)) {
      plots.unobserve(tile.plot);
      tile.root.remove();
      tiles.delete(id);
    }
  }
  queues.forEach((queue, index) => {
    let tile = tiles.get(queue.id);
    if (!tile) {
      const title = el("span", { class: "queue-name" });
      const number = el("span", { class: "queue-number" });
      const values = new Map();
      const list = el("dl");
      for (const [name, label] of FIGURES) {
        const value = el("dd");
        values.set(name, value);
        list.append(
          el("div", { class: "figure", "data-figure": name }, el("dt", {}, label), value),
        );
      }
      const plot = el("div", { class: "curve-plot" });
      const root = el(
        "article",
        { class: "tile", "data-queue-id": queue.id, "aria-labelledby": `queue-${queue.id}` },
        el("h3", { id: `queue-${queue.id}` }, title, " ", number),
        list,
        el(
          "figure",
          { class: "curve" },
          el(
            "figcaption",
            { class: "curve-legend" },
            el("span", { class: "key-waiting" }, "Calls waiting (most per 15 min)"),
            el("span", { class: "key-level" }, "Service level"),
          ),
          plot,
        ),
      );
      tile = { root, title, number, values, plot };
      tiles.set(queue.id, tile);
      plots.observe(plot);
    }
    if (container.children[index] !== tile.root) {
      container.insertBefore(tile.root, container.children[index] ?? null);
    }
    const figures = queueTile(queue, now + offset, thresholds);
    drawCurve(queue.id, tile.plot);
    text(tile.title, queueName(queue));
    text(tile.number, queue.number);
    data(tile.root, "data-level", figures.level);
    for (const [name, , write] of FIGURES) {
      const value = /** @type {HTMLElement} */ (tile.values.get(name));
      text(value, write(figures));
      const levels = /** @type {Record<string, string>} */ (figures.levels);
      data(/** @type {HTMLElement} */ (value.parentElement), "data-level", levels[name] ?? "ok");
    }
  });
}

// --- the day's curve, per queue -------------------------------------------------------------

/**
 * Each queue's day as the REST API last answered it, when it was asked, a timer for the next
 * time, and what its plot was last drawn with (redrawn only when that changes).
 *
 * @type {Map<number, { intervals: import("./model.js").Interval[] | null, version: number,
 *   askedAt: number, timer?: ReturnType<typeof setTimeout>, drawn: string }>}
 */
const curves = new Map();
/** @type {ReturnType<typeof setInterval> | undefined} */
let curveClock;

/** Asks for queue `id`'s day soon: now, or once {@link CURVE_AGAIN_MS} passed since the last. */
function curveSoon(/** @type {number} */ id) {
  let curve = curves.get(id);
  if (!curve) curves.set(id, curve = { intervals: null, version: 0, askedAt: 0, drawn: "" });
  if (curve.timer !== undefined) return;
  const wait = Math.max(0, curve.askedAt + CURVE_AGAIN_MS - Date.now());
  curve.timer = setTimeout(() => fetchCurve(id), wait);
  // the time moves on without a call: every minute, every queue's
  curveClock ??= setInterval(() => {
    for (const queueId of board.queues.keys()) curveSoon(queueId);
  }, CURVE_EVERY_MS);
}

async function fetchCurve(/** @type {number} */ id) {
  const curve = curves.get(id);
  if (!curve || !session) return;
  curve.askedAt = Date.now();
  try {
    const answer = await call(`/supervision/queues/${id}/intervals`, {
      headers: { Authorization: `Bearer ${session.token}` },
    });
    if (curves.get(id) !== curve) return; // signed out meanwhile
    curve.intervals = answer.intervals;
    curve.version++;
    render();
  } catch {
    // kept as it was: the next change or minute asks again
  } finally {
    curve.timer = undefined;
  }
}

function forgetCurves() {
  for (const curve of curves.values()) clearTimeout(curve.timer);
  curves.clear();
  clearInterval(curveClock);
  curveClock = undefined;
}

/** A plot is drawn again when its size changes (a resize, the TV view). */
const plots = new ResizeObserver((entries) => {
  for (const entry of entries) {
    const id = Number(entry.target.closest(".tile")?.getAttribute("data-queue-id"));
    if (board.queues.has(id)) drawCurve(id, /** @type {HTMLElement} */ (entry.target));
  }
});

const SVG = "http://www.w3.org/2000/svg";

/**
 * An SVG element with attributes and children.
 *
 * @param {string} tag
 * @param {Record<string, string | number>} attributes
 * @param {(Node | string)[]} children
 */
function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) {
    element.setAttribute(name, String(value));
  }
  element.append(...children);
  return element;
}

/** Numbers in an SVG attribute: a tenth of a pixel is enough. */
const px = (/** @type {number} */ value) => String(Math.round(value * 10) / 10);

/** Draws queue `id`'s day in `plot` (an SVG of its size), when what it shows changed. */
function drawCurve(/** @type {number} */ id, /** @type {HTMLElement} */ plot) {
  const curve = curves.get(id);
  const intervals = curve?.intervals;
  if (!curve || !intervals) return;
  const { width, height } = plot.getBoundingClientRect();
  const font = parseFloat(getComputedStyle(plot).fontSize) || 14;
  const warn = thresholds.serviceLevel.warn;
  const key = `${curve.version}|${width}x${height}|${font}|${warn}`;
  if (curve.drawn === key || width < 10 || height < 10) return;
  curve.drawn = key;
  const plan = curvePlan(intervals, { width, height, font, warn });
  const { plot: box } = plan;
  const name = board.queues.get(id);
  const parts = [
    svg(
      "title",
      {},
      `${name ? queueName(name) : "The queue"} today: the most calls waiting and the service ` +
        "level, per 15 minutes",
    ),
    ...plan.waitingTicks.map((tick) =>
      svg("line", {
        class: "grid",
        x1: px(box.left),
        x2: px(box.left + box.width),
        y1: px(tick.y),
        y2: px(tick.y),
      })
    ),
    ...plan.waitingTicks.map((tick) =>
      svg("text", {
        class: "axis axis-waiting",
        x: px(box.left - font * 0.4),
        y: px(tick.y),
        "text-anchor": "end",
        "dominant-baseline": "middle",
      }, String(tick.value))
    ),
    ...plan.levelTicks.map((tick) =>
      svg("text", {
        class: "axis axis-level",
        x: px(box.left + box.width + font * 0.4),
        y: px(tick.y),
        "dominant-baseline": "middle",
      }, `${tick.value}%`)
    ),
    ...plan.hours.map((hour) =>
      svg("text", {
        class: "axis",
        x: px(hour.x),
        y: px(box.bottom + font * 1.15),
        "text-anchor": "middle",
      }, hour.label)
    ),
    svg("line", {
      class: "threshold",
      x1: px(box.left),
      x2: px(box.left + box.width),
      y1: px(plan.warn.y),
      y2: px(plan.warn.y),
    }),
    ...plan.bars.map((bar) =>
      svg(
        "g",
        {
          class: "interval",
          "data-start": bar.start,
          "data-waiting": bar.waiting,
          "data-service-level": bar.serviceLevel === null ? "" : bar.serviceLevel,
        },
        ...(bar.height > 0
          ? [svg("rect", {
            class: "waiting-bar",
            x: px(bar.x),
            y: px(bar.y),
            width: px(bar.width),
            height: px(bar.height),
          })]
          : []),
        ...(bar.level === null ? [] : [svg("circle", {
          class: "point",
          cx: px(bar.centre),
          cy: px(bar.level),
          r: px(Math.max(2.5, font * 0.28)),
        })]),
      )
    ),
    ...plan.lines.filter((line) => line.length > 1).map((line) =>
      svg("polyline", {
        class: "level-line",
        points: line.map((point) => `${px(point.x)},${px(point.y)}`).join(" "),
      })
    ),
    ...(plan.empty
      ? [svg("text", {
        class: "axis",
        x: px(box.left + box.width / 2),
        y: px(box.top + box.height / 2),
        "text-anchor": "middle",
        "dominant-baseline": "middle",
      }, "No call yet today")]
      : []),
  ];
  plot.replaceChildren(
    svg(
      "svg",
      {
        class: "curve-chart",
        width: px(width),
        height: px(height),
        viewBox: `0 0 ${px(width)} ${px(height)}`,
        role: "img",
        "data-from": plan.from ?? "",
      },
      ...parts,
    ),
  );
}

/** @type {Map<number, { row: HTMLElement, cells: Record<string, HTMLElement>, pause: HTMLButtonElement, logout: HTMLButtonElement, queues: HTMLButtonElement }>} */
const rows = new Map();

function drawAgents(/** @type {number} */ now) {
  const body = /** @type {HTMLElement} */ (byId("agents").querySelector("tbody"));
  const agents = [...board.agents.values()].sort((a, b) =>
    a.number.localeCompare(b.number, undefined, { numeric: true }) || a.id - b.id
  );
  byId("no-agents").hidden = agents.length > 0;
  for (const [id, entry] of rows) {
    if (!board.agents.has(id)) {
      entry.row.remove();
      rows.delete(id);
    }
  }
  agents.forEach((agent, index) => {
    let entry = rows.get(agent.id);
    if (!entry) entry = newRow(agent.id);
    if (body.children[index] !== entry.row) {
      body.insertBefore(entry.row, body.children[index] ?? null);
    }
    const shown = agentRow(agent, now, offset);
    const name = agentName(agent);
    const who = name ? `${agent.number} ${name}` : agent.number;
    const { cells } = entry;
    text(cells.number, agent.number);
    text(cells.name, name);
    data(entry.row, "data-state", shown.state);
    data(cells.state, "data-state", shown.state);
    text(cells.label, shown.label);
    data(cells.label, "data-state", shown.state);
    text(cells.inState, duration(shown.inState));
    text(cells.call, shown.callNumber);
    const memberOf = [...agentQueues(board, agent.id).keys()]
      .map((id) => board.queues.get(id))
      .filter((queue) => queue !== undefined)
      .map((queue) => queueName(/** @type {any} */ (queue)));
    text(cells.queues, memberOf.join(", "));
    text(cells.answered, String(shown.answered));
    text(cells.missed, String(shown.missed));
    text(cells.talk, duration(shown.talk));
    text(entry.pause, shown.paused ? "Unpause" : "Pause");
    data(entry.pause, "aria-label", `${shown.paused ? "Unpause" : "Pause"} ${who}`);
    data(entry.pause, "data-action", shown.paused ? "unpause" : "pause");
    entry.pause.disabled = !shown.logged;
    entry.logout.disabled = !shown.logged;
    data(entry.logout, "aria-label", `Log out ${who}`);
    data(entry.queues, "aria-label", `Queues of ${who}`);
  });
}

/** @param {number} id */
function newRow(id) {
  const cell = (/** @type {string} */ field, /** @type {Record<string, any>} */ attributes = {}) =>
    el("td", { "data-field": field, ...attributes });
  const number = el("span", { class: "agent-number" });
  const name = el("span", { class: "agent-name" });
  const label = el("span", { class: "state" });
  const pause = /** @type {HTMLButtonElement} */ (el("button", {
    type: "button",
    "data-action": "pause",
    onclick: () => pauseOrUnpause(id),
  }));
  const logout = /** @type {HTMLButtonElement} */ (el("button", {
    type: "button",
    "data-action": "logout",
    onclick: () => logOut(id),
  }, "Log out"));
  const queues = /** @type {HTMLButtonElement} */ (el("button", {
    type: "button",
    "data-action": "queues",
    onclick: () => editQueues(id),
  }, "Queues…"));
  const cells = {
    agent: el("th", { scope: "row", "data-field": "agent" }, number, " ", name),
    number,
    name,
    state: cell("state"),
    label,
    inState: cell("inState", { class: "num" }),
    call: cell("call"),
    queues: cell("queues"),
    answered: cell("answered", { class: "num" }),
    missed: cell("missed", { class: "num" }),
    talk: cell("talk", { class: "num" }),
  };
  cells.state.append(label);
  const row = el(
    "tr",
    { "data-agent-id": id },
    cells.agent,
    cells.state,
    cells.inState,
    cells.call,
    cells.queues,
    cells.answered,
    cells.missed,
    cells.talk,
    el("td", { class: "actions" }, pause, logout, queues),
  );
  const entry = { row, cells, pause, logout, queues };
  rows.set(id, entry);
  return entry;
}

function drawCalls(/** @type {number} */ now) {
  const container = byId("calls");
  const queues = [...board.queues.values()].sort((a, b) => a.id - b.id);
  const parts = queues.map((queue) => {
    const calls = queue.calls ?? [];
    const heading = el("h3", { id: `calls-${queue.id}` }, queueName(queue));
    if (!calls.length) {
      return el(
        "section",
        { "data-queue-calls": queue.id, "aria-labelledby": `calls-${queue.id}` },
        heading,
        el("p", { class: "empty" }, "No call waiting."),
      );
    }
    const table = el(
      "table",
      {},
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          el("th", { scope: "col", class: "num" }, "#"),
          el("th", { scope: "col" }, "Caller"),
          el("th", { scope: "col", class: "num" }, "Waiting"),
        ),
      ),
      el(
        "tbody",
        {},
        ...calls.map((waiting) => {
          const wait = Math.floor((now + offset - Date.parse(waiting.queueTime)) / 1000);
          const level = thresholdLevel(wait);
          return el(
            "tr",
            { "data-caller": waiting.number, "data-level": level },
            el("td", { class: "num" }, String(waiting.position)),
            el(
              "td",
              {},
              el("span", { class: "caller-number" }, waiting.number),
              waiting.name && waiting.name !== waiting.number ? ` ${waiting.name}` : "",
            ),
            el("td", { class: "num" }, duration(wait)),
          );
        }),
      ),
    );
    return el(
      "section",
      { "data-queue-calls": queue.id, "aria-labelledby": `calls-${queue.id}` },
      heading,
      table,
    );
  });
  container.replaceChildren(...parts);
}

/** @param {number} wait */
function thresholdLevel(wait) {
  const { warn, alert } = thresholds.longestWait;
  return wait >= alert ? "alert" : wait >= warn ? "warn" : "ok";
}

// --- actions -------------------------------------------------------------------------------

/**
 * Opens `dialog`, answers the button it was closed with ("cancel" for Escape).
 *
 * @param {HTMLDialogElement} dialog
 * @returns {Promise<string>}
 */
function ask(dialog) {
  return new Promise((resolve) => {
    dialog.returnValue = "cancel";
    dialog.addEventListener("close", () => resolve(dialog.returnValue), { once: true });
    dialog.showModal();
  });
}

/** @param {number} id */
function describe(id) {
  const agent = board.agents.get(id);
  if (!agent) return `agent ${id}`;
  const name = agentName(agent);
  return name ? `${agent.number} ${name}` : agent.number;
}

/** @param {number} id */
async function pauseOrUnpause(id) {
  const agent = board.agents.get(id);
  if (!agent || !connection) return;
  if (agent.stats.Paused === true) return connection.web("unpauseAgent", { agentid: id });
  const dialog = /** @type {HTMLDialogElement} */ (byId("pause-dialog"));
  text(byId("pause-title"), `Pause ${describe(id)}`);
  const reason = /** @type {HTMLInputElement} */ (byId("pause-reason"));
  reason.value = "";
  if (await ask(dialog) !== "ok") return;
  const fields = reason.value.trim()
    ? { agentid: id, reason: reason.value.trim() }
    : { agentid: id };
  connection?.web("pauseAgent", fields);
}

/** @param {number} id */
async function logOut(id) {
  const dialog = /** @type {HTMLDialogElement} */ (byId("logout-dialog"));
  text(byId("logout-text"), `Log ${describe(id)} out of every queue?`);
  if (await ask(dialog) !== "ok") return;
  connection?.web("agentLogout", { agentid: id });
}

/** @param {number} id */
async function editQueues(id) {
  const dialog = /** @type {HTMLDialogElement} */ (byId("queues-dialog"));
  text(byId("queues-dialog-title"), `Queues of ${describe(id)}`);
  const before = agentQueues(board, id);
  const queues = [...board.queues.values()].sort((a, b) => a.id - b.id);
  const inputs = queues.map((queue) => {
    const member = /** @type {HTMLInputElement} */ (el("input", {
      type: "checkbox",
      id: `member-${queue.id}`,
      checked: before.has(queue.id),
    }));
    const penalty = /** @type {HTMLInputElement} */ (el("input", {
      type: "number",
      min: 0,
      step: 1,
      value: before.get(queue.id) ?? 0,
      "aria-label": `Penalty in ${queueName(queue)}`,
    }));
    const row = el(
      "tr",
      {},
      el("th", { scope: "row" }, el("label", { for: `member-${queue.id}` }, queueName(queue))),
      el("td", {}, member),
      el("td", {}, penalty),
    );
    return { queue, member, penalty, row };
  });
  byId("queues-dialog-rows").replaceChildren(...inputs.map((input) => input.row));
  if (await ask(dialog) !== "ok") return;
  const after = new Map();
  for (const { queue, member, penalty } of inputs) {
    if (member.checked) after.set(queue.id, Math.max(0, Math.floor(Number(penalty.value) || 0)));
  }
  for (const command of membershipCommands(id, before, after)) connection?.send(command);
}

byId("thresholds-button").addEventListener("click", async () => {
  const dialog = /** @type {HTMLDialogElement} */ (byId("thresholds-dialog"));
  const form = /** @type {HTMLFormElement} */ (byId("thresholds-form"));
  for (const [name, limit] of Object.entries(thresholds)) {
    for (const bound of ["warn", "alert"]) {
      const input = /** @type {HTMLInputElement} */ (form.elements.namedItem(`${name}.${bound}`));
      input.value = String(limit[/** @type {"warn" | "alert"} */ (bound)]);
    }
  }
  const answer = await ask(dialog);
  if (answer === "reset") {
    localStorage.removeItem(THRESHOLDS_KEY);
    thresholds = readThresholds(null);
  } else if (answer === "save") {
    /** @type {Record<string, Record<string, number>>} */
    const chosen = {};
    for (const name of Object.keys(DEFAULT_THRESHOLDS)) {
      chosen[name] = {};
      for (const bound of ["warn", "alert"]) {
        const input = /** @type {HTMLInputElement} */ (form.elements.namedItem(`${name}.${bound}`));
        chosen[name][bound] = Number(input.value);
      }
    }
    localStorage.setItem(THRESHOLDS_KEY, JSON.stringify(chosen));
    thresholds = readThresholds(JSON.stringify(chosen));
  }
  render();
});

start();
