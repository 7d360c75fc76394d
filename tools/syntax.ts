/** The bundle's syntax tree, for the steps of `tools/finish_bundle.ts`: acorn's ESTree nodes. */
import * as acorn from "acorn";

/** An ESTree node as acorn gives it. */
export type Node = acorn.Node & Record<string, unknown>;

export const isNode = (value: unknown): value is Node =>
  typeof value === "object" && value !== null && typeof (value as Node).type === "string";

/** The syntax tree of `text`, a module or a script; a syntax error throws. */
export const parse = (text: string, sourceType: "module" | "script" = "module"): Node =>
  acorn.parse(text, { ecmaVersion: "latest", sourceType }) as unknown as Node;
