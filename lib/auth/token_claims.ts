/**
 * The claims of an access token (decisions §2, lib/auth/tokens.ts), checked after its signature:
 * a module of its own, loaded with zod by the first token checked (docs/performance.md).
 */
import * as z from "zod";

/** The schema of the claims of a token of format `version`. */
export const tokenClaims = (version: number) =>
  z.object({
    login: z.string(),
    expiresAt: z.number().int(),
    issuedAt: z.number().int(),
    userType: z.enum(["cti", "webservice"]),
    acls: z.array(z.string()),
    sub: z.string(),
    exp: z.number().int(),
    iat: z.number().int(),
    jti: z.string(),
    v: z.literal(version),
  });

export type TokenClaims = ReturnType<typeof tokenClaims>;
