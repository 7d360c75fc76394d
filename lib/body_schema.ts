/**
 * The zod pieces the routes' body schemas share. Apart from lib/http.ts, which reads bodies
 * against schemas without zod's code: the start loads none of it (docs/performance.md).
 */
import * as z from "zod";

/** Zod error messages that read well after `field <name>: `. */
export const required = (type: string) => ({
  error: (issue: { input: unknown }) => issue.input === undefined ? "required" : `expected ${type}`,
});

/** An object body; anything else (an array, `null`, a number) does not match the model. */
export const bodyObject = <S extends z.ZodRawShape>(shape: S) =>
  z.object(shape, { error: "the body must be a JSON object" });
