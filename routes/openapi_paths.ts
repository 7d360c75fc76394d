/**
 * Where the OpenAPI documents are served (routes/openapi.ts), which the document itself lists
 * among the service's paths (routes/openapi_document.ts).
 */
/** Where the whole document is served. */
export const OPENAPI_PATH = "/svc/api/2.0/openapi.json";

/** The documents of one area, served by the app at the daemon's usual place. */
export const AREA_DOCUMENTS = [
  { path: "/1.1/api/api.yml", base: "/1.1", tag: "Configuration daemon (1.1)" },
  { path: "/api/api.yml", base: "/", tag: "Agent daemon" },
  { path: "/0.1/api/api.yml", base: "/0.1", tag: "xivo-auth tokens (0.1)" },
  { path: "/1.0/api/api.yml", base: "/1.0", tag: "Call daemon (1.0)" },
] as const;
