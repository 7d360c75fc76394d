/**
 * Every answer the tests get through `app.request()` is checked against the OpenAPI document
 * (`docs/openapi.json`, which a test keeps equal to what the code generates): its status must be
 * one the operation documents (or covered by `2XX`/`default`), its media type one the answer
 * declares, and a JSON body must match the declared schema (ajv, JSON Schema 2020-12, the dialect
 * of OpenAPI 3.1). `setup()` (tests/helpers.ts) turns it on for every app it builds.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { ValidateFunction } from "ajv";

// deno-lint-ignore no-explicit-any
type Json = any;

/** ajv-formats is CommonJS: its function is the default export, or that export's `default`. */
const addFormats = ((addFormatsModule as Json).default ?? addFormatsModule) as (a: Json) => void;

const DOCUMENT_URL = new URL("../docs/openapi.json", import.meta.url);

interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  /** Characters outside path values: the more, the more specific (static paths win). */
  fixed: number;
  pointer: string;
  responses: Record<string, Json>;
}

let loaded: { operations: Operation[]; ajv: Ajv2020 } | undefined;

/** A JSON pointer segment inside a URI fragment. */
const segment = (text: string) =>
  encodeURIComponent(text.replaceAll("~", "~0").replaceAll("/", "~1"));

function load() {
  if (loaded) return loaded;
  const document = JSON.parse(Deno.readTextFileSync(DOCUMENT_URL));
  // the document itself is the schema every `$ref` resolves in (`#/components/schemas/…`)
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(document, "openapi");
  const operations: Operation[] = [];
  for (const [template, methods] of Object.entries<Json>(document.paths)) {
    const source = template.split(/\{\w+\}/).map((part) =>
      part.replace(/[.*+?^$()|[\]\\]/g, "\\$&")
    )
      .join("[^/]+");
    for (const [method, operation] of Object.entries<Json>(methods)) {
      operations.push({
        method: method.toUpperCase(),
        template,
        pattern: new RegExp(`^${source}$`),
        fixed: template.replace(/\{\w+\}/g, "").length,
        pointer: `openapi#/paths/${segment(template)}/${method}`,
        responses: operation.responses,
      });
    }
  }
  return loaded = { operations, ajv };
}

const validators = new Map<string, ValidateFunction>();

function validator(ajv: Ajv2020, pointer: string): ValidateFunction {
  let validate = validators.get(pointer);
  if (!validate) validators.set(pointer, validate = ajv.compile({ $ref: pointer }));
  return validate;
}

/** The operation `method` on `path` is, the most specific when several templates match. */
function findOperation(method: string, path: string): Operation | undefined {
  const matches = load().operations.filter((op) => op.method === method && op.pattern.test(path));
  return matches.sort((a, b) => b.fixed - a.fixed)[0];
}

/**
 * Throws when `response` (to `method` on `path`) is not what the document says. Answers nobody
 * documents (an unknown path, a preflight, HEAD) are left alone.
 */
export async function checkResponse(method: string, path: string, response: Response) {
  if (method === "HEAD" || method === "OPTIONS" || response.status === 101) return;
  const operation = findOperation(method, path);
  if (!operation) return;
  const where = `${method} ${path} (${operation.template}) answered ${response.status}`;
  const status = String(response.status);
  const key = [status, `${status[0]}XX`, "default"].find((k) => k in operation.responses);
  if (!key) throw new Error(`${where}: the OpenAPI document names no such answer`);
  const declared = operation.responses[key];
  if (!declared.content) {
    if (key === "2XX") return; // a route that declares no answer: nothing to check
    const text = await response.clone().text();
    if (text) throw new Error(`${where}: the document says no body, got ${text.slice(0, 200)}`);
    return;
  }
  const type = (response.headers.get("content-type") ?? "").split(";")[0]!.trim();
  const mediaType = type in declared.content ? type : "*/*" in declared.content ? "*/*" : null;
  if (mediaType === null) {
    throw new Error(
      `${where}: media type ${type || "none"}, the document says ${Object.keys(declared.content)}`,
    );
  }
  if (type !== "application/json" || !declared.content[mediaType].schema) return;
  const text = await response.clone().text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${where}: the body is not JSON: ${text.slice(0, 200)}`);
  }
  const pointer = `${operation.pointer}/responses/${segment(key)}/content/${
    segment(mediaType)
  }/schema`;
  const validate = validator(load().ajv, pointer);
  if (!validate(body)) {
    const errors = load().ajv.errorsText(validate.errors, { separator: "; " });
    throw new Error(
      `${where}: the body does not match the document: ${errors}\n${text.slice(0, 500)}`,
    );
  }
}

/** What `app.request` is called with, as `checkResponse` needs it. */
export function requestLine(input: RequestInfo | URL, init?: RequestInit) {
  const request = input instanceof Request ? input : null;
  const url = new URL(request ? request.url : String(input), "http://localhost");
  return { method: (init?.method ?? request?.method ?? "GET").toUpperCase(), path: url.pathname };
}
