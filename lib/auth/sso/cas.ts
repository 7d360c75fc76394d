/**
 * CAS single sign-on: a service ticket is validated against the CAS server's `/serviceValidate`
 * (CAS 2.0: `GET <casUrl>/serviceValidate?service=…&ticket=…`), whose XML answer names the user
 * (`cas:authenticationSuccess/cas:user`) or a failure code (`cas:authenticationFailure code="…"`),
 * mapped to the spec's `CasServer*` errors (all 403):
 *
 * | CAS failure code | Error |
 * |---|---|
 * | `INVALID_REQUEST` | `CasServerInvalidRequest` |
 * | `INVALID_TICKET_SPEC` | `CasServerInvalidTicketSpec` |
 * | `UNAUTHORIZED_SERVICE_PROXY` | `CasServerUnauthorizedServiceProxy` |
 * | `INVALID_PROXY_CALLBACK` | `CasServerInvalidProxyCallback` |
 * | `INVALID_TICKET` | `CasServerInvalidTicket` |
 * | `INVALID_SERVICE` | `CasServerInvalidService` |
 * | `INTERNAL_ERROR` | `CasServerInternalError` |
 *
 * An answer that is not a CAS `serviceResponse` (or names a code outside that list), an HTTP
 * status other than 200 (redirects are not followed), no answer within the timeout, or a server
 * that cannot be reached is `CasServerInvalidResponse`; a parameter that cannot be sent is
 * `CasServerInvalidParameter`.
 *
 * The XML is read by the small, strict parser below (no dependency): elements, attributes,
 * namespaces, character data, CDATA, comments and processing instructions; the five predefined
 * entities and character references are decoded; a document type declaration, an undefined entity
 * or a malformed document is refused.
 */
import { ApiError } from "../../errors.ts";

/** The namespace of CAS 2.0 and 3.0 validation responses. */
export const CAS_NAMESPACE = "http://www.yale.edu/tp/cas";

/** How long the CAS server has to answer a validation, body included. */
export const DEFAULT_TIMEOUT_MS = 10_000;

/** A validation response is a few hundred bytes; a larger one than this is refused. */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

/** No service URL or ticket is longer; a longer one is refused before it is sent. */
export const MAX_PARAMETER_LENGTH = 4096;

/** The spec's error for each CAS failure code (CAS protocol 3.0, section 2.5.3). */
export const CAS_FAILURE_CODES: Readonly<Record<string, string>> = {
  INVALID_REQUEST: "CasServerInvalidRequest",
  INVALID_TICKET_SPEC: "CasServerInvalidTicketSpec",
  UNAUTHORIZED_SERVICE_PROXY: "CasServerUnauthorizedServiceProxy",
  INVALID_PROXY_CALLBACK: "CasServerInvalidProxyCallback",
  INVALID_TICKET: "CasServerInvalidTicket",
  INVALID_SERVICE: "CasServerInvalidService",
  INTERNAL_ERROR: "CasServerInternalError",
};

export interface CasValidationOptions {
  /** Milliseconds the server has to answer, body included; {@link DEFAULT_TIMEOUT_MS} by default. */
  timeoutMs?: number;
}

const invalidResponse = (why: string) =>
  new ApiError(
    403,
    "CasServerInvalidResponse",
    `the CAS server returned an invalid response: ${why}`,
  );

const invalidParameter = (why: string) =>
  new ApiError(403, "CasServerInvalidParameter", `invalid CAS parameter: ${why}`);

/**
 * Validates a CAS service ticket against `casUrl` (`/serviceValidate`, CAS 2.0 XML) and answers
 * the user name; throws `ApiError(403, "CasServer…")` mapping each CAS failure code.
 *
 * @example
 * const login = await validateCasTicket("https://cas.example.com/cas", service, "ST-1-abc");
 */
export async function validateCasTicket(
  casUrl: string,
  service: string,
  ticket: string,
  { timeoutMs = DEFAULT_TIMEOUT_MS }: CasValidationOptions = {},
): Promise<string> {
  checkParameter("service", service);
  checkParameter("ticket", ticket);
  const url = serviceValidateUrl(casUrl, service, ticket);
  const signal = AbortSignal.timeout(timeoutMs);
  let text: string;
  try {
    const response = await fetch(url, {
      signal,
      redirect: "manual",
      headers: { Accept: "application/xml, text/xml;q=0.9, */*;q=0.1" },
    });
    if (response.status !== 200) {
      await response.body?.cancel();
      throw invalidResponse(`HTTP status ${response.status} from ${url.origin}${url.pathname}`);
    }
    text = await readBody(response);
  } catch (error) {
    if (error instanceof ApiError) throw error;
    if (signal.aborted) throw invalidResponse(`no answer within ${timeoutMs} ms`);
    throw invalidResponse(`${url.origin} is unreachable (${(error as Error).message})`);
  }
  return parseCasResponse(text);
}

/** Refuses a parameter that is empty, too long, or holds control characters. */
function checkParameter(name: string, value: string): void {
  if (!value) throw invalidParameter(`${name} is empty`);
  if (value.length > MAX_PARAMETER_LENGTH) {
    throw invalidParameter(`${name} is longer than ${MAX_PARAMETER_LENGTH} characters`);
  }
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) {
    throw invalidParameter(`${name} holds control characters`);
  }
}

/** `<casUrl>/serviceValidate?service=…&ticket=…`, keeping any query `casUrl` has. */
function serviceValidateUrl(casUrl: string, service: string, ticket: string): URL {
  let url: URL;
  try {
    url = new URL(casUrl);
  } catch {
    throw invalidResponse(`the CAS server URL ${JSON.stringify(casUrl)} is not a URL`);
  }
  url.pathname = url.pathname.replace(/\/*$/, "/serviceValidate");
  url.hash = "";
  url.searchParams.set("service", service);
  url.searchParams.set("ticket", ticket);
  return url;
}

/** The body as UTF-8 text, refusing more than {@link MAX_RESPONSE_BYTES}. */
async function readBody(response: Response): Promise<string> {
  if (!response.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      // Leaving the loop cancels the stream.
      throw invalidResponse(`the answer is larger than ${MAX_RESPONSE_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw invalidResponse("the answer is not UTF-8");
  }
}

/**
 * Reads a CAS 2.0/3.0 `serviceResponse` document: answers the user of an
 * `authenticationSuccess`, throws the mapped `CasServer*` error of an `authenticationFailure`,
 * and `CasServerInvalidResponse` for anything else.
 *
 * @example
 * parseCasResponse(`<cas:serviceResponse xmlns:cas='http://www.yale.edu/tp/cas'>
 *   <cas:authenticationSuccess><cas:user>dwho</cas:user></cas:authenticationSuccess>
 * </cas:serviceResponse>`); // "dwho"
 */
export function parseCasResponse(text: string): string {
  let root: XmlElement;
  try {
    root = parseXml(text);
  } catch (error) {
    if (error instanceof XmlError) throw invalidResponse(`not XML: ${error.message}`);
    throw error;
  }
  if (!isCas(root, "serviceResponse")) {
    throw invalidResponse(`the root element is <${root.name}>, not a CAS serviceResponse`);
  }
  const outcome = elements(root)[0];
  if (outcome && isCas(outcome, "authenticationSuccess")) {
    const user = elements(outcome).find((child) => isCas(child, "user"));
    const login = user ? textOf(user).trim() : "";
    if (!login) throw invalidResponse("authenticationSuccess names no user");
    return login;
  }
  if (outcome && isCas(outcome, "authenticationFailure")) {
    const code = (outcome.attributes.get("code") ?? "").trim();
    const reason = textOf(outcome).replace(/\s+/g, " ").trim().slice(0, 200);
    const said = reason ? ` (${reason})` : "";
    const mapped = Object.hasOwn(CAS_FAILURE_CODES, code) ? CAS_FAILURE_CODES[code] : undefined;
    if (!mapped) throw invalidResponse(`unknown CAS failure code ${JSON.stringify(code)}${said}`);
    throw new ApiError(403, mapped, `the CAS server refused the ticket: ${code}${said}`);
  }
  throw invalidResponse(
    outcome ? `unexpected <${outcome.name}> in the serviceResponse` : "empty serviceResponse",
  );
}

// --- A small, strict XML reader -----------------------------------------------------------------

/** An element: its qualified name, namespace, unprefixed attributes, and children in order. */
interface XmlElement {
  /** The name as written, prefix included. */
  name: string;
  /** The local part of the name. */
  local: string;
  /** The namespace URI the prefix (or the default namespace) is bound to; null when none. */
  namespace: string | null;
  /** Attributes by their name as written (`xmlns` declarations excluded), values decoded. */
  attributes: Map<string, string>;
  /** Text (decoded) and child elements. */
  children: (XmlElement | string)[];
  /** The namespace bindings in scope: prefix (`""` for the default) → URI. */
  scope: Map<string, string>;
}

class XmlError extends Error {}

const NAME = /^[\p{L}_][\p{L}\p{N}_.\-\u00b7]*(?::[\p{L}_][\p{L}\p{N}_.\-\u00b7]*)?$/u;
const PREDEFINED: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };
const REFERENCE = /^&(?:#x([0-9a-fA-F]{1,6})|#([0-9]{1,7})|([a-zA-Z]+));/;
const TAG_NAME = /[^\s/>]+/y;
const SPACES = /\s*/y;
const ATTRIBUTE = /([^\s=/>]+)\s*=\s*(?:"([^"<]*)"|'([^'<]*)')/y;
const XML_NAMESPACE = "http://www.w3.org/XML/1998/namespace";

/** Matches the sticky `pattern` exactly at `at` of `text`. */
function stickyMatch(pattern: RegExp, text: string, at: number): RegExpExecArray | null {
  pattern.lastIndex = at;
  return pattern.exec(text);
}

function isCas(element: XmlElement, local: string): boolean {
  return element.namespace === CAS_NAMESPACE && element.local === local;
}

const elements = (element: XmlElement) =>
  element.children.filter((child): child is XmlElement => typeof child !== "string");

/** The element's own character data (not its descendants'). */
const textOf = (element: XmlElement) =>
  element.children.filter((child): child is string => typeof child === "string").join("");

/** Decodes the predefined entities and character references; any other `&` is an error. */
function decodeEntities(raw: string): string {
  if (!raw.includes("&")) return raw;
  let out = "";
  let at = 0;
  for (let amp = raw.indexOf("&"); amp >= 0; amp = raw.indexOf("&", at)) {
    out += raw.slice(at, amp);
    const match = REFERENCE.exec(raw.slice(amp, amp + 16));
    if (!match) throw new XmlError(`a bare "&" at ${JSON.stringify(raw.slice(amp, amp + 12))}`);
    const [reference, hex, decimal, name] = match;
    if (name !== undefined) {
      const value = Object.hasOwn(PREDEFINED, name) ? PREDEFINED[name] : undefined;
      if (value === undefined) throw new XmlError(`undefined entity &${name};`);
      out += value;
    } else {
      const code = parseInt(hex ?? decimal!, hex !== undefined ? 16 : 10);
      const allowed = code === 0x9 || code === 0xa || code === 0xd ||
        (code >= 0x20 && code <= 0xd7ff) || (code >= 0xe000 && code <= 0xfffd) ||
        (code >= 0x10000 && code <= 0x10ffff);
      if (!allowed) throw new XmlError(`${reference} is not an XML character`);
      out += String.fromCodePoint(code);
    }
    at = amp + reference.length;
  }
  return out + raw.slice(at);
}

/** Resolves the element's prefix against its scope (after its own declarations were read). */
function bindNamespace(element: XmlElement): void {
  const colon = element.name.indexOf(":");
  const prefix = colon >= 0 ? element.name.slice(0, colon) : "";
  element.local = colon >= 0 ? element.name.slice(colon + 1) : element.name;
  const uri = element.scope.get(prefix);
  if (prefix && uri === undefined) throw new XmlError(`unbound prefix ${prefix}:`);
  element.namespace = uri || null;
}

/** Parses a whole document and answers its root element. */
function parseXml(text: string): XmlElement {
  const stack: XmlElement[] = [];
  let root: XmlElement | null = null;
  let at = text.charCodeAt(0) === 0xfeff ? 1 : 0;

  const until = (marker: string, from: number, what: string) => {
    const end = text.indexOf(marker, from);
    if (end < 0) throw new XmlError(`unterminated ${what}`);
    return end;
  };
  const sticky = (pattern: RegExp, from: number) => stickyMatch(pattern, text, from);
  const addText = (value: string) => {
    const parent = stack.at(-1);
    if (parent) parent.children.push(value);
    else if (value.trim()) throw new XmlError("text outside the root element");
  };

  while (at < text.length) {
    if (text[at] !== "<") {
      const end = text.indexOf("<", at);
      const raw = text.slice(at, end < 0 ? text.length : end);
      addText(decodeEntities(raw));
      at = end < 0 ? text.length : end;
    } else if (text.startsWith("<?", at)) {
      at = until("?>", at + 2, "processing instruction") + 2;
    } else if (text.startsWith("<!--", at)) {
      at = until("-->", at + 4, "comment") + 3;
    } else if (text.startsWith("<![CDATA[", at)) {
      if (!stack.length) throw new XmlError("CDATA outside the root element");
      const end = until("]]>", at + 9, "CDATA section");
      addText(text.slice(at + 9, end));
      at = end + 3;
    } else if (text.startsWith("<!", at)) {
      throw new XmlError("document type declarations are not accepted");
    } else if (text.startsWith("</", at)) {
      const end = until(">", at + 2, "end tag");
      const name = text.slice(at + 2, end).trim();
      const open = stack.pop();
      if (!open || open.name !== name) {
        throw new XmlError(`</${name}> closes ${open ? `<${open.name}>` : "nothing"}`);
      }
      at = end + 1;
    } else {
      at = readStartTag(at);
    }
  }
  if (stack.length) throw new XmlError(`<${stack.at(-1)!.name}> is not closed`);
  if (!root) throw new XmlError("no root element");
  return root;

  /** Reads `<name attr="v" …>` or `<name …/>` at `start`; answers the index after it. */
  function readStartTag(start: number): number {
    const name = sticky(TAG_NAME, start + 1)?.[0] ?? "";
    if (!NAME.test(name)) throw new XmlError(`bad element name ${JSON.stringify(name)}`);
    let at = start + 1 + name.length;
    const parent = stack.at(-1);
    if (!parent && root) throw new XmlError("a second root element");
    const element: XmlElement = {
      name,
      local: name,
      namespace: null,
      attributes: new Map(),
      children: [],
      scope: new Map(parent?.scope ?? [["xml", XML_NAMESPACE]]),
    };
    for (;;) {
      const spaced = sticky(SPACES, at)![0].length;
      at += spaced;
      if (text.startsWith("/>", at) || text[at] === ">") break;
      if (at >= text.length) throw new XmlError(`unterminated <${name}>`);
      const attribute = spaced ? sticky(ATTRIBUTE, at) : null;
      if (!attribute || !NAME.test(attribute[1]!)) {
        throw new XmlError(`bad attribute in <${name}>`);
      }
      const [whole, attributeName, doubled, single] = attribute as unknown as string[];
      const value = decodeEntities(doubled ?? single ?? "");
      if (attributeName === "xmlns") element.scope.set("", value);
      else if (attributeName!.startsWith("xmlns:")) {
        element.scope.set(attributeName!.slice(6), value);
      } else if (element.attributes.has(attributeName!)) {
        throw new XmlError(`attribute ${attributeName} repeated in <${name}>`);
      } else element.attributes.set(attributeName!, value);
      at += whole!.length;
    }
    bindNamespace(element);
    if (parent) parent.children.push(element);
    else root = element;
    if (text[at] === ">") {
      stack.push(element);
      return at + 1;
    }
    return at + 2;
  }
}
