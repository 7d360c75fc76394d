/**
 * A throw-away Asterisk 20/22 for tests, everything on 127.0.0.1: a short work directory under
 * /tmp holds its whole configuration and state (etc, run, log, spool, AstDB…); the binary and its
 * modules stay in the install prefix. It has a UDP SIP transport, an AMI user with every right
 * and no SIP user, queue or dialplan of its own: pjsip.conf, extensions.conf and queues.conf each
 * `#tryinclude` the file svc generates into `configDir` (`SVC_ASTERISK_CONFIG_DIR`), and so does
 * voicemail.conf (its messages as WAV, under the work dir's spool). Around that: music on hold
 * (class `default`, a 300 Hz tone), US tones (ringback in-band for a channel already up),
 * ConfBridge's default profiles (quiet) and svc's rooms' (`confbridge_svc.conf`), no CDR or CEL. Its data directory is the work dir's own,
 * holding a link to the install's documentation (Asterisk does not start without it) and one
 * sound, `beep` (a 2 kHz tone: what `VoiceMail` plays before it records), and ConfBridge's PIN
 * prompts (short tones).
 *
 * Asterisk runs in the foreground (`asterisk -f`), so its PID is the child's; it is stopped by that
 * PID. `findAsterisk()` tells where one is installed.
 */
import { dirname } from "node:path";
import { until } from "../e2e/svc_http.ts";
import { isFile, onPath, type PeerProcess, reservePorts, spawnPeer } from "./peer_process.ts";
import { sineWav } from "./wav.ts";

/** Where a client logs in to the PBX's AMI. */
export interface AmiLogin {
  host: string;
  port: number;
  username: string;
  secret: string;
}

/**
 * The modules the live test needs of an Asterisk build (`<prefix>/lib/asterisk/modules/<name>.so`):
 * SIP, the dialplan applications and functions svc's generated files use, queues, the AstDB,
 * bridges, codecs, music on hold, ConfBridge. `startPbx` refuses a build that lacks one.
 */
export const NEEDED_MODULES = [
  "chan_pjsip",
  "res_pjsip",
  "res_pjsip_session",
  "res_pjsip_registrar",
  "res_pjsip_authenticator_digest",
  "res_pjsip_endpoint_identifier_user",
  "res_pjsip_sdp_rtp",
  "res_pjsip_exten_state",
  "res_pjsip_notify",
  "res_rtp_asterisk",
  "res_timing_timerfd",
  "pbx_config",
  "app_dial",
  "app_queue",
  "app_stack",
  "func_db",
  "func_groupcount",
  "func_strings",
  "func_callerid",
  "bridge_simple",
  "bridge_native_rtp",
  "bridge_softmix",
  "codec_ulaw",
  "codec_alaw",
  "format_wav",
  "res_musiconhold",
  "app_confbridge",
  "app_voicemail",
  "app_chanspy",
];

/**
 * Modules left out: they need a configuration this PBX does not have, or would open ports of their
 * own (several PBXs run side by side), or write files nobody reads.
 */
const NOT_LOADED = [
  // ports of their own
  "chan_iax2",
  "chan_unistim",
  "pbx_dundi",
  "res_hep",
  "res_hep_pjsip",
  "res_hep_rtcp",
  "res_statsd",
  // HTTP, websockets and ARI: the PBX's HTTP server is off
  "chan_websocket",
  "res_http_websocket",
  "res_websocket_client",
  "res_pjsip_transport_websocket",
  "res_http_media_cache",
  "res_prometheus",
  "res_phoneprov",
  "res_pjsip_phoneprov_provider",
  "res_ari",
  "res_ari_applications",
  "res_ari_asterisk",
  "res_ari_bridges",
  "res_ari_channels",
  "res_ari_device_states",
  "res_ari_endpoints",
  "res_ari_events",
  "res_ari_model",
  "res_ari_playbacks",
  "res_ari_recordings",
  "res_ari_sounds",
  "app_stasis",
  "app_stasis_broadcast",
  "res_stasis_broadcast",
  // configuration they would need, services nobody uses here
  "chan_audiosocket",
  "app_audiosocket",
  "res_audiosocket",
  "res_aeap",
  "res_speech_aeap",
  "res_geolocation",
  "res_pjsip_geolocation",
  "res_pjsip_publish_asterisk",
  "res_pjsip_config_wizard",
  "res_stun_monitor",
  "res_smdi",
  "res_calendar",
  "res_clialiases",
  "res_parking",
  "res_config_sqlite3",
  "res_config_pgsql",
  "res_config_curl",
  "pbx_realtime",
  "pbx_ael",
  "app_agent_pool",
  "app_alarmreceiver",
  "app_amd",
  "app_festival",
  "app_minivm",
  "app_followme",
  "res_adsi",
  "app_adsiprog",
  "app_getcpeid",
  // CDR and CEL are off
  "cdr_csv",
  "cdr_custom",
  "cdr_manager",
  "cdr_pgsql",
  "cdr_sqlite3_custom",
  "cel_custom",
  "cel_manager",
  "cel_pgsql",
  "cel_sqlite3_custom",
];

/** Files modules read at start-up, logging an error when they are missing: written empty. */
const EMPTY_FILES = ["acl.conf", "ccss.conf", "udptl.conf", "pjproject.conf", "pjsip_notify.conf"];

/**
 * Asterisk's install prefix (`<prefix>/sbin/asterisk`): `SVC_TEST_ASTERISK` when set (answered as
 * given: a wrong one should fail a test, not skip it), else that of the `asterisk` on PATH, else
 * `/opt/asterisk` if it has one; null when there is none.
 */
export function findAsterisk(): string | null {
  const given = Deno.env.get("SVC_TEST_ASTERISK");
  if (given) return given.replace(/\/+$/, "");
  const binary = onPath("asterisk");
  if (binary) return dirname(dirname(Deno.realPathSync(binary)));
  return isFile("/opt/asterisk/sbin/asterisk") ? "/opt/asterisk" : null;
}

/**
 * An outside route as recorded in transcript 20 (`config["extensions.conf"]`'s addition): numbers
 * `0XXXXX…` dial a second channel that answers, as a trunk would.
 */
export const OUTSIDE_ROUTE = [
  "[default]",
  "exten => _0XXXXX.,1,NoOp(outside call to ${EXTEN})",
  " same => n,Dial(Local/${EXTEN}@acc-outside,60)",
  "[acc-outside]",
  "exten => _X.,1,Answer()",
  " same => n,Wait(3600)",
].join("\n");

/**
 * `config["manager.conf"]` for a recorded session: the events svc never reads left out, as in the
 * recordings of `tests/peers/asterisk_transcripts/`.
 */
export const quietManager = (ours: string) =>
  ours + ["VarSet", "RTCPSent", "RTCPReceived"]
    .map((name) => `eventfilter(action(exclude),name(${name})) =\n`).join("");

export interface PbxOptions {
  /**
   * Asterisk's install prefix: `<prefix>/sbin/asterisk`, its modules in
   * `<prefix>/lib/asterisk/modules`.
   */
  prefix: string;
  /**
   * The directory svc writes its `pjsip_svc.conf`, `extensions_svc.conf` and `queues_svc.conf`
   * into (`SVC_ASTERISK_CONFIG_DIR`); `<workDir>/svc` unless told. Created if missing.
   */
  configDir?: string;
  /** The UDP SIP port; a free one unless told. */
  sipPort?: number;
  /** The AMI's TCP port; a free one unless told. */
  amiPort?: number;
  /** The AMI user (`read = all`, `write = all`); `svc` with a random secret unless told. */
  ami?: { username: string; secret: string };
  /** Asterisk's RTP port range; 16000–16999 unless told (several PBXs can share it). */
  rtpPorts?: [number, number];
  /**
   * Configuration files of the work dir's `etc/` to change: a text replaces the file of that name
   * (or adds one), a function edits the text written here. E.g. an outside number:
   * `{ "extensions.conf": (text) => text + "[default]\nexten => _0X.,1,Answer()\n same => n,Wait(5)\n" }`
   */
  config?: Record<string, string | ((ours: string) => string)>;
}

export interface Pbx {
  prefix: string;
  /** Everything of this PBX (its `etc/` among others); removed by `stop()`. */
  workDir: string;
  /** Its `asterisk.conf`, for `asterisk -C`. */
  asteriskConf: string;
  /** Where svc's three files are included from. */
  configDir: string;
  sipPort: number;
  amiPort: number;
  ami: AmiLogin;
  /** Music on hold class `default`'s directory (a 300 Hz tone). */
  mohDir: string;
  /** Where `VoiceMail` leaves messages: `<spool>/<context>/<mailbox>/INBOX/msg0000.wav`, … */
  voicemailDir: string;
  /** Asterisk's last output lines (those of the last run after a restart). */
  readonly output: string[];
  /** True while Asterisk runs (from `start()` to `halt()`). */
  readonly running: boolean;
  /** Runs Asterisk; resolves once it is fully booted (60 s at most), throws if it exits first. */
  start(): Promise<void>;
  /** Stops Asterisk (SIGTERM, SIGKILL after 6 s), keeping its work dir: `start()` runs it again. */
  halt(): Promise<void>;
  /** A CLI command (`asterisk -rx`): its output, or the reason it could not connect. */
  cli(command: string): Promise<string>;
  /** True when each of `endpoints` has a contact registered and reachable (`Avail`). */
  registered(endpoints: string[]): Promise<boolean>;
  /** True once the AMI accepts `ami`'s login (a probe connection, closed at once). */
  amiAcceptsLogin(): Promise<boolean>;
  /** Stops Asterisk and removes the work dir. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Asterisk's data directory in `prefix`, which holds its XML documentation: `var/lib/asterisk` for
 * a build from source, `share/asterisk` for some distributions' packages.
 */
function dataDir(prefix: string): string {
  const candidates = [`${prefix}/var/lib/asterisk`, `${prefix}/share/asterisk`];
  return candidates.find((dir) => isFile(`${dir}/documentation/core-en_US.xml`)) ?? candidates[0]!;
}

/** The config files of a PBX in `workDir`, by name. */
function pbxConfig(
  { prefix, workDir, configDir, sipPort, ami, rtpPorts }: {
    prefix: string;
    workDir: string;
    configDir: string;
    sipPort: number;
    ami: AmiLogin;
    rtpPorts: [number, number];
  },
): Record<string, string> {
  const lines = (...text: string[]) => text.join("\n") + "\n";
  const include = (file: string) =>
    `; svc's generated configuration\n#tryinclude ${configDir}/${file}`;
  return {
    "asterisk.conf": lines(
      "[directories]",
      `astetcdir => ${workDir}/etc`,
      `astmoddir => ${prefix}/lib/asterisk/modules`,
      `astvarlibdir => ${workDir}/lib`,
      `astdbdir => ${workDir}/lib`,
      `astkeydir => ${workDir}/lib`,
      // its own (the beep), linking to the install's XML documentation, needed to start
      `astdatadir => ${workDir}/data`,
      `astagidir => ${workDir}/lib/agi-bin`,
      `astspooldir => ${workDir}/spool`,
      `astrundir => ${workDir}/run`,
      `astlogdir => ${workDir}/log`,
      `astcachedir => ${workDir}/cache`,
      `astsbindir => ${prefix}/sbin`,
      "",
      "[options]",
      "verbose = 3",
      "debug = 0",
      "documentation_language = en_US",
    ),
    "modules.conf": lines(
      "[modules]",
      "autoload = yes",
      ...NOT_LOADED.map((name) => `noload => ${name}.so`),
    ),
    "logger.conf": lines(
      "[general]",
      "dateformat = %F %T.%3q",
      "[logfiles]",
      "console => notice,warning,error,verbose",
      "messages.log => notice,warning,error,verbose",
    ),
    "manager.conf": lines(
      "[general]",
      "enabled = yes",
      "webenabled = no",
      `bindaddr = ${ami.host}`,
      `port = ${ami.port}`,
      "",
      `[${ami.username}]`,
      `secret = ${ami.secret}`,
      "deny = 0.0.0.0/0.0.0.0",
      "permit = 127.0.0.1/255.255.255.255",
      "read = all",
      "write = all",
      "writetimeout = 1000",
    ),
    "http.conf": lines("[general]", "enabled = no"),
    "pjsip.conf": lines(
      "[global]",
      "type = global",
      "user_agent = svc test PBX",
      "",
      "[transport-udp]",
      "type = transport",
      "protocol = udp",
      `bind = 127.0.0.1:${sipPort}`,
      "",
      include("pjsip_svc.conf"),
    ),
    "rtp.conf": lines("[general]", `rtpstart = ${rtpPorts[0]}`, `rtpend = ${rtpPorts[1]}`),
    "extensions.conf": lines(
      "[general]",
      "static = yes",
      "writeprotect = yes",
      "",
      "[globals]",
      "",
      include("extensions_svc.conf"),
    ),
    "queues.conf": lines(
      "[general]",
      "persistentmembers = no",
      "shared_lastcall = yes",
      "",
      include("queues_svc.conf"),
    ),
    "voicemail.conf": lines(
      "[general]",
      "format = wav",
      "attach = no",
      "maxsecs = 300",
      "minsecs = 0",
      "maxsilence = 0",
      "",
      include("voicemail_svc.conf"),
    ),
    "musiconhold.conf": lines(
      "[general]",
      "[default]",
      "mode = files",
      `directory = ${workDir}/moh`,
    ),
    "indications.conf": lines(
      "[general]",
      "country = us",
      "",
      "[us]",
      "description = United States",
      "ringcadence = 2000,4000",
      "dial = 350+440",
      "busy = 480+620/500,0/500",
      "ring = 440+480/2000,0/4000",
      "congestion = 480+620/250,0/250",
      "callwaiting = 440/300,0/10000",
    ),
    "confbridge.conf": lines(
      "[general]",
      "[default_user]",
      "type = user",
      "quiet = yes",
      "[default_bridge]",
      "type = bridge",
      include("confbridge_svc.conf"),
    ),
    "features.conf": lines("[general]", "[featuremap]", "blindxfer => #1", "atxfer => *2"),
    ...Object.fromEntries(EMPTY_FILES.map((name) => [name, ""])),
    "cdr.conf": lines("[general]", "enable = no"),
    "cel.conf": lines("[general]", "enable = no"),
  };
}

/**
 * Writes a PBX's work dir and configuration, and answers it not running yet: `start()` runs it.
 * Useful when svc must write its files before Asterisk first reads them.
 */
export async function preparePbx(options: PbxOptions): Promise<Pbx> {
  const { prefix, rtpPorts = [16000, 16999] } = options;
  const binary = `${prefix}/sbin/asterisk`;
  if (!isFile(binary)) throw new Error(`no ${binary}: not an Asterisk prefix`);
  const missing = NEEDED_MODULES.filter((name) =>
    !isFile(`${prefix}/lib/asterisk/modules/${name}.so`)
  );
  if (missing.length > 0) {
    throw new Error(`the Asterisk of ${prefix} lacks modules: ${missing.join(", ")}`);
  }
  // short: Asterisk's control socket, <workDir>/run/asterisk.ctl, must fit in 108 bytes
  const workDir = await Deno.makeTempDir({ dir: "/tmp", prefix: "svc-ast-" });
  const configDir = options.configDir ?? `${workDir}/svc`;
  const ami: AmiLogin = {
    host: "127.0.0.1",
    port: options.amiPort ?? reservePorts(),
    username: options.ami?.username ?? "svc",
    secret: options.ami?.secret ?? crypto.randomUUID(),
  };
  const sipPort = options.sipPort ?? reservePorts();
  const etc = `${workDir}/etc`;
  const mohDir = `${workDir}/moh`;
  const dirs = ["run", "log", "spool", "lib/keys", "cache", "data/sounds/en"]
    .map((name) => `${workDir}/${name}`);
  for (const dir of [...dirs, etc, mohDir, configDir]) await Deno.mkdir(dir, { recursive: true });
  await Deno.symlink(`${dataDir(prefix)}/documentation`, `${workDir}/data/documentation`);
  await Deno.writeFile(
    `${workDir}/data/sounds/en/beep.wav`,
    sineWav({ hz: 2000, seconds: 0.3 }),
  );
  // ConfBridge's PIN prompts: without them it cannot ask a PIN (short tones)
  for (const [sound, hz] of [["conf-getpin", 600], ["conf-invalidpin", 800]] as const) {
    await Deno.writeFile(`${workDir}/data/sounds/en/${sound}.wav`, sineWav({ hz, seconds: 0.3 }));
  }
  const files = pbxConfig({ prefix, workDir, configDir, sipPort, ami, rtpPorts });
  for (const [name, change] of Object.entries(options.config ?? {})) {
    files[name] = typeof change === "string" ? change : change(files[name] ?? "");
  }
  for (const [name, text] of Object.entries(files)) {
    await Deno.writeTextFile(`${etc}/${name}`, text);
  }
  await Deno.writeFile(`${mohDir}/tone-300hz.wav`, sineWav({ hz: 300, seconds: 5 }));

  const asteriskConf = `${etc}/asterisk.conf`;
  let process: PeerProcess | null = null;
  let lastOutput: string[] = [];
  const cli = async (command: string) => {
    const output = await new Deno.Command(binary, {
      args: ["-C", asteriskConf, "-rx", command],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    return new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  };
  const halt = async () => {
    const running = process;
    process = null;
    await running?.stop();
  };
  const pbx: Pbx = {
    prefix,
    workDir,
    asteriskConf,
    configDir,
    sipPort,
    amiPort: ami.port,
    ami,
    mohDir,
    voicemailDir: `${workDir}/spool/voicemail`,
    get output() {
      return process?.output ?? lastOutput;
    },
    get running() {
      return process !== null;
    },
    async start() {
      if (process) throw new Error("Asterisk runs already");
      const started = spawnPeer("asterisk", binary, ["-f", "-n", "-g", "-C", asteriskConf], {
        cwd: workDir,
      });
      process = started;
      lastOutput = started.output;
      await until(
        async () => {
          if (started.exited) {
            throw new Error(`Asterisk exited at start:\n${started.output.slice(-40).join("\n")}`);
          }
          return /fully booted/i.test(await cli("core waitfullybooted"));
        },
        60_000,
        "Asterisk fully booted",
      );
    },
    halt,
    cli,
    async registered(endpoints: string[]) {
      const contacts = await cli("pjsip show contacts");
      return endpoints.every((name) =>
        new RegExp(`Contact:\\s+${name}/sip:\\S+\\s+\\S+\\s+Avail`).test(contacts)
      );
    },
    amiAcceptsLogin: () => amiAcceptsLogin(ami),
    async stop() {
      await halt();
      await Deno.remove(workDir, { recursive: true }).catch(() => {});
    },
    [Symbol.asyncDispose]: () => pbx.stop(),
  };
  return pbx;
}

/**
 * Starts a throw-away Asterisk (see the module's comment) and resolves once it is fully booted.
 *
 * @example
 * await using pbx = await startPbx({ prefix: findAsterisk()!, configDir: "/tmp/svc-conf" });
 * // svc: SVC_AMI_PORT=pbx.amiPort, SVC_AMI_USERNAME=pbx.ami.username, SVC_AMI_SECRET=pbx.ami.secret,
 * //      SVC_ASTERISK_CONFIG_DIR=pbx.configDir; phones: startPhone({ pbx, … })
 * console.log(await pbx.cli("pjsip show endpoints"));
 */
export async function startPbx(options: PbxOptions): Promise<Pbx> {
  const pbx = await preparePbx(options);
  try {
    await pbx.start();
  } catch (error) {
    await pbx.stop();
    throw error;
  }
  return pbx;
}

/** True once the AMI at `ami` accepts its login (a probe connection of its own, closed at once). */
export async function amiAcceptsLogin(ami: AmiLogin): Promise<boolean> {
  let conn: Deno.TcpConn;
  try {
    conn = await Deno.connect({ hostname: ami.host, port: ami.port });
  } catch {
    return false;
  }
  const deadline = setTimeout(() => conn.close(), 3_000);
  try {
    const decoder = new TextDecoder();
    const buffer = new Uint8Array(4096);
    let text = "";
    let sent = false;
    for (;;) {
      const n = await conn.read(buffer);
      if (n === null) return false;
      text += decoder.decode(buffer.subarray(0, n));
      if (!sent && text.includes("\r\n")) {
        sent = true;
        await conn.write(new TextEncoder().encode(
          `Action: Login\r\nActionID: probe\r\nUsername: ${ami.username}\r\n` +
            `Secret: ${ami.secret}\r\nEvents: off\r\n\r\n`,
        ));
      }
      const answer = text.indexOf("Response:");
      if (answer >= 0 && text.indexOf("\r\n\r\n", answer) >= 0) {
        return /Response: Success/.test(text);
      }
    }
  } catch {
    return false;
  } finally {
    clearTimeout(deadline);
    try {
      conn.close();
    } catch {
      // closed by the deadline or by Asterisk
    }
  }
}
