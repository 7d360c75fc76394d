/**
 * The text of `docs/openapi.json`: the document of the app built with the default settings (an
 * in-memory store, the simulated PBX), as `deno task openapi` writes it and a test compares it.
 */
import { loadConfig } from "../lib/config.ts";
import { createServices } from "../lib/services.ts";
import { createApp } from "./mod.ts";
import { appDocument } from "./openapi_document.ts";

export async function openApiFile(): Promise<string> {
  const services = await createServices(loadConfig({ SVC_KV: ":memory:" }));
  try {
    return `${JSON.stringify(appDocument(createApp(services).routes), null, 2)}\n`;
  } finally {
    services.store.close();
  }
}
