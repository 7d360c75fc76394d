/**
 * `deno task openapi`: writes the OpenAPI document of the app (the default settings: the
 * simulated PBX, whose control routes it then holds) to `docs/openapi.json`. A test fails while
 * the file differs from what the code generates (tests/routes/openapi_test.ts).
 */
import { openApiFile } from "../routes/openapi_file.ts";

const target = new URL("../docs/openapi.json", import.meta.url);
await Deno.writeTextFile(target, await openApiFile());
console.log(`wrote ${target.pathname}`);
