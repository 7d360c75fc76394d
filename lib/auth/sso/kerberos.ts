/**
 * Kerberos single sign-on (`GET /auth/sso`, HTTP Negotiate of RFC 4559): accepts the client's
 * SPNEGO token with the service keytab through the system's MIT GSS-API library
 * (`libgssapi_krb5.so.2`), reached with Deno's FFI.
 *
 * - The library is opened on the first token, not at start-up: a machine without it (or a process
 *   without `--allow-ffi`) still starts, and single sign-on then answers 401
 *   `SsoAuthenticationFailed` saying why.
 * - The keytab is named per credential with `gss_acquire_cred_from` and its `keytab` credential
 *   store entry, so neither the process environment (`KRB5_KTNAME`) nor the library's process-wide
 *   acceptor identity (`krb5_gss_register_acceptor_identity`) is touched, and the file is read
 *   again for each token (a rotated keytab needs no restart).
 * - The acceptor name is `GSS_C_NO_NAME`: any service principal of the keytab is accepted (e.g.
 *   `HTTP/host.example.com@EXAMPLE.COM`), whatever host name the client used.
 * - The calls are synchronous: they only read the keytab and update the replay cache, well under a
 *   millisecond, and MIT keeps a failure's detailed text in thread-local storage, which
 *   `gss_display_status` only finds on the thread that failed (a `nonblocking` call runs on another
 *   thread).
 * - Every name, buffer, credential and context the library gives back is released before `accept`
 *   answers, whatever the outcome. The structures handed to the library are laid out for 64-bit
 *   little-endian Linux (x86-64, arm64); the memory they point to is held by locals for the whole
 *   synchronous call, during which no JavaScript (so no garbage collection) runs.
 */
import { ApiError } from "../../errors.ts";

/** What accepting a SPNEGO token gave: the client principal and the token to send back, if any. */
export interface SpnegoResult {
  /** E.g. `alice@EXAMPLE.TEST`. */
  principal: string;
  /** Base64 token for `WWW-Authenticate: Negotiate <token>` (mutual authentication), or null. */
  responseToken: string | null;
}

/** The library's file names, tried in turn. */
const LIBRARY_NAMES = ["libgssapi_krb5.so.2", "libgssapi_krb5.so"];

/** The GSS-API functions used here (RFC 2744 and MIT's `gss_acquire_cred_from`). */
const SYMBOLS = {
  gss_acquire_cred_from: {
    // minor, desired_name, time_req, desired_mechs, cred_usage, cred_store, output_cred,
    // actual_mechs, time_rec
    parameters: [
      "buffer",
      "pointer",
      "u32",
      "buffer",
      "i32",
      "buffer",
      "buffer",
      "pointer",
      "pointer",
    ],
    result: "u32",
  },
  gss_accept_sec_context: {
    // minor, context, acceptor_cred, input_token, channel_bindings, src_name, mech_type,
    // output_token, ret_flags, time_rec, delegated_cred
    parameters: [
      "buffer",
      "buffer",
      "pointer",
      "buffer",
      "pointer",
      "buffer",
      "pointer",
      "buffer",
      "buffer",
      "pointer",
      "pointer",
    ],
    result: "u32",
  },
  gss_display_name: {
    // minor, name, output_name, output_name_type
    parameters: ["buffer", "pointer", "buffer", "pointer"],
    result: "u32",
  },
  gss_display_status: {
    // minor, status_value, status_type, mech_type, message_context, status_string
    parameters: ["buffer", "u32", "i32", "pointer", "buffer", "buffer"],
    result: "u32",
  },
  gss_release_buffer: { parameters: ["buffer", "buffer"], result: "u32" },
  gss_release_name: { parameters: ["buffer", "buffer"], result: "u32" },
  gss_release_cred: { parameters: ["buffer", "buffer"], result: "u32" },
  gss_delete_sec_context: { parameters: ["buffer", "buffer", "pointer"], result: "u32" },
} as const satisfies Deno.ForeignLibraryInterface;

type Gss = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

const GSS_C_INDEFINITE = 0xffffffff;
const GSS_C_ACCEPT = 2;
const GSS_C_GSS_CODE = 1;
const GSS_C_MECH_CODE = 2;
const GSS_C_ANON_FLAG = 64;
const GSS_S_COMPLETE = 0;
const GSS_S_CONTINUE_NEEDED = 1;
/** The calling and routine error bits of a major status (`GSS_ERROR()`). */
const GSS_ERROR_MASK = 0xffff0000;
/** SPNEGO, 1.3.6.1.5.5.2, DER-encoded. */
const SPNEGO_OID = new Uint8Array([0x2b, 0x06, 0x01, 0x05, 0x05, 0x02]);
/** A decoded token larger than this is refused before it reaches the library. */
const MAX_TOKEN_BYTES = 64 * 1024;

/** The opened library, or why it could not be opened; undefined until first needed. */
let loaded: { gss: Gss } | { error: string } | undefined;

function library(): Gss {
  if (loaded === undefined) {
    const failures: string[] = [];
    for (const name of LIBRARY_NAMES) {
      try {
        loaded = { gss: Deno.dlopen(name, SYMBOLS).symbols };
        break;
      } catch (error) {
        failures.push(`${name}: ${(error as Error).message}`);
        // Without --allow-ffi, no other name fares better.
        if (error instanceof Deno.errors.NotCapable) break;
      }
    }
    loaded ??= { error: failures.join("; ") };
  }
  if ("error" in loaded) {
    throw failed(`the GSS-API library (MIT Kerberos) cannot be loaded: ${loaded.error}`);
  }
  return loaded.gss;
}

const failed = (message: string) =>
  new ApiError(401, "SsoAuthenticationFailed", `Kerberos authentication failed: ${message}`);

/** The address of `buffer`'s memory, for a pointer field of a structure. */
const addressOf = (buffer: BufferSource): bigint =>
  BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(buffer)));

/** A pointer-sized out-parameter (`gss_name_t *`, `gss_ctx_id_t *`, ...), starting null. */
const handle = () => new BigUint64Array(1);
const pointerIn = (out: BigUint64Array): Deno.PointerValue => Deno.UnsafePointer.create(out[0]!);

/** A `gss_buffer_desc` ({size_t length; void *value}); `bytes` must outlive its use. */
function bufferDesc(bytes: Uint8Array<ArrayBuffer> | null = null): DataView<ArrayBuffer> {
  const view = new DataView(new ArrayBuffer(16));
  if (bytes && bytes.length > 0) {
    view.setBigUint64(0, BigInt(bytes.length), true);
    view.setBigUint64(8, addressOf(bytes), true);
  }
  return view;
}

/** The bytes a library-filled `gss_buffer_desc` holds (copied), then releases it. */
function takeBuffer(gss: Gss, desc: DataView<ArrayBuffer>): Uint8Array {
  const length = Number(desc.getBigUint64(0, true));
  const address = desc.getBigUint64(8, true);
  const pointer = Deno.UnsafePointer.create(address);
  try {
    if (length === 0 || pointer === null) return new Uint8Array(0);
    return new Uint8Array(new Deno.UnsafePointerView(pointer).getArrayBuffer(length)).slice();
  } finally {
    if (pointer !== null) gss.gss_release_buffer(new Uint32Array(1), desc);
  }
}

/** The text of a major status and its minor status, as `gss_display_status` words them. */
function statusText(gss: Gss, major: number, minor: number): string {
  const messages = [...statusMessages(gss, major, GSS_C_GSS_CODE)];
  if (minor !== 0) messages.push(...statusMessages(gss, minor, GSS_C_MECH_CODE));
  return messages.join("; ") || `GSS-API major status ${major}, minor status ${minor}`;
}

function* statusMessages(gss: Gss, code: number, type: number): Generator<string> {
  const context = new Uint32Array(1);
  // message_context is 0 after the last message; at most a few, but never loop forever.
  for (let i = 0; i < 8; i++) {
    const text = bufferDesc();
    const major = gss.gss_display_status(new Uint32Array(1), code, type, null, context, text);
    if ((major & GSS_ERROR_MASK) !== 0) return;
    // SPNEGO counts the C string's final NUL in the length.
    const message = new TextDecoder().decode(takeBuffer(gss, text)).replaceAll("\0", "").trim();
    if (message) yield message;
    if (context[0] === 0) return;
  }
}

/** Decodes standard base64 strictly (with or without padding); null when it is not. */
function decodeBase64(text: string): Uint8Array<ArrayBuffer> | null {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || text.length % 4 === 1) return null;
  try {
    return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
  } catch {
    return null;
  }
}

function encodeBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Accepts SPNEGO tokens with the service keytab (`SVC_KRB5_KEYTAB`) through GSS-API. */
export class KerberosAcceptor {
  constructor(readonly keytab: string) {}

  /** Throws `ApiError(401, "SsoAuthenticationFailed")` for a token GSS-API does not accept. */
  accept(negotiateToken: string): Promise<SpnegoResult> {
    try {
      return Promise.resolve(this.#accept(negotiateToken));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #accept(negotiateToken: string): SpnegoResult {
    const token = decodeBase64(negotiateToken);
    if (!token) throw failed("the Negotiate token is not base64");
    if (token.length > MAX_TOKEN_BYTES) throw failed("the Negotiate token is too large");
    const gss = library();
    const minor = new Uint32Array(1);
    const credential = this.#acquireCredential(gss);
    const context = handle();
    const sourceName = handle();
    try {
      const input = bufferDesc(token);
      const output = bufferDesc();
      const flags = new Uint32Array(1);
      const major = gss.gss_accept_sec_context(
        minor,
        context,
        pointerIn(credential),
        input,
        null,
        sourceName,
        null,
        output,
        flags,
        null,
        null,
      );
      const responseBytes = takeBuffer(gss, output);
      if ((major & GSS_ERROR_MASK) !== 0) {
        throw failed(statusText(gss, major, minor[0]!));
      }
      if (major !== GSS_S_COMPLETE) {
        // A stateless HTTP exchange cannot keep a context for a second round (e.g. a SPNEGO
        // token whose optimistic mechanism token is missing or not Kerberos).
        throw failed(
          major === GSS_S_CONTINUE_NEEDED
            ? "the token needs another SPNEGO round; only a one-round Kerberos exchange is accepted"
            : statusText(gss, major, 0),
        );
      }
      if ((flags[0]! & GSS_C_ANON_FLAG) !== 0) {
        throw failed("anonymous Kerberos principals are not accepted");
      }
      return {
        principal: this.#displayName(gss, sourceName),
        responseToken: responseBytes.length > 0 ? encodeBase64(responseBytes) : null,
      };
    } finally {
      if (sourceName[0] !== 0n) gss.gss_release_name(new Uint32Array(1), sourceName);
      if (context[0] !== 0n) gss.gss_delete_sec_context(new Uint32Array(1), context, null);
      gss.gss_release_cred(new Uint32Array(1), credential);
    }
  }

  /** An acceptor credential for SPNEGO reading `this.keytab`; the caller releases it. */
  #acquireCredential(gss: Gss): BigUint64Array {
    const key = new TextEncoder().encode("keytab\0");
    const value = new TextEncoder().encode(`${this.keytab}\0`);
    // gss_key_value_element_desc {const char *key; const char *value;}
    const element = new DataView(new ArrayBuffer(16));
    element.setBigUint64(0, addressOf(key), true);
    element.setBigUint64(8, addressOf(value), true);
    // gss_key_value_set_desc {OM_uint32 count; gss_key_value_element_desc *elements;}
    const store = new DataView(new ArrayBuffer(16));
    store.setUint32(0, 1, true);
    store.setBigUint64(8, addressOf(element), true);
    // gss_OID_desc {OM_uint32 length; void *elements;} and gss_OID_set_desc {size_t count;
    // gss_OID elements;}
    const oid = new DataView(new ArrayBuffer(16));
    oid.setUint32(0, SPNEGO_OID.length, true);
    oid.setBigUint64(8, addressOf(SPNEGO_OID), true);
    const mechs = new DataView(new ArrayBuffer(16));
    mechs.setBigUint64(0, 1n, true);
    mechs.setBigUint64(8, addressOf(oid), true);

    const minor = new Uint32Array(1);
    const credential = handle();
    const major = gss.gss_acquire_cred_from(
      minor,
      null,
      GSS_C_INDEFINITE,
      mechs,
      GSS_C_ACCEPT,
      store,
      credential,
      null,
      null,
    );
    if ((major & GSS_ERROR_MASK) !== 0) {
      if (credential[0] !== 0n) gss.gss_release_cred(new Uint32Array(1), credential);
      throw failed(
        // The keytab's path is not told to the client.
        "the service keytab has no usable key (missing, unreadable or empty?): " +
          statusText(gss, major, minor[0]!),
      );
    }
    return credential;
  }

  /** `alice@EXAMPLE.TEST` for a name handle. */
  #displayName(gss: Gss, name: BigUint64Array): string {
    const minor = new Uint32Array(1);
    const text = bufferDesc();
    const major = gss.gss_display_name(minor, pointerIn(name), text, null);
    if ((major & GSS_ERROR_MASK) !== 0) throw failed(statusText(gss, major, minor[0]!));
    const principal = new TextDecoder().decode(takeBuffer(gss, text)).replaceAll("\0", "");
    if (!principal) throw failed("the client principal has no name");
    return principal;
  }
}
