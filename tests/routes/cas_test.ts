import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import {
  CAS_FAILURE_CODES,
  MAX_PARAMETER_LENGTH,
  parseCasResponse,
  validateCasTicket,
} from "../../lib/auth/sso/cas.ts";
import { ApiError } from "../../lib/errors.ts";
import {
  bearer,
  closedPort,
  ctiUser,
  expectError,
  setup,
  type TestContext,
  webServiceUser,
} from "../helpers.ts";
import { CAS_PACKAGES, CAS_WHY, startCasServer } from "../peers/cas_server.ts";
import { skipWithoutPackages } from "../peers/debian.ts";

const CAS = "/svc/api/2.0/auth/cas";
const CHECK = "/svc/api/2.0/auth/check";

/** The CTI application's service URL, registered at the CAS server (never contacted). */
const SERVICE = "http://127.0.0.1/cti/login";
/** Another service registered at the CAS server. */
const OTHER_SERVICE = "http://127.0.0.1/other/login";

const casLogin = (ctx: TestContext, query: Record<string, string>) =>
  Promise.resolve(ctx.app.request(`${CAS}?${new URLSearchParams(query)}`));

/** Asserts 200 with the token result for `login`; answers the issued token. */
async function expectLoggedIn(response: Response, login: string): Promise<string> {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  const body = JSON.parse(text);
  assert.deepEqual(Object.keys(body).sort(), ["TTL", "login", "token"]);
  assert.equal(body.login, login);
  assert.equal(body.TTL, 7200);
  const claims = decodeJwt(body.token);
  assert.equal(claims.login, login);
  assert.equal(claims.userType, "cti");
  assert.deepEqual(claims.acls, ["alias.ctiuser"]);
  return body.token;
}

const noCas = await skipWithoutPackages(CAS_PACKAGES, CAS_WHY);

Deno.test(
  "GET /auth/cas against a real CAS server (LemonLDAP::NG)",
  { ignore: noCas },
  async (t) => {
    const cas = await startCasServer({ services: [SERVICE, OTHER_SERVICE] });
    console.log(`CAS peer (LemonLDAP::NG) started in ${(cas.startupMs / 1000).toFixed(2)} s`);
    const ctx = await setup({ SVC_CAS_URL: cas.url });
    try {
      await ctiUser(ctx, "dwho");
      await ctiUser(ctx, "rtyler");
      await webServiceUser(ctx, ["#"], "msmith");

      await t.step("a real service ticket logs in; the token is valid on /auth/check", async () => {
        const { ticket } = await cas.serviceTicket(SERVICE, "dwho");
        assert.match(ticket, /^ST-/);
        const token = await expectLoggedIn(
          await casLogin(ctx, { service: SERVICE, ticket }),
          "dwho",
        );
        const checked = await ctx.app.request(CHECK, { headers: bearer(token) });
        const text = await checked.text();
        assert.equal(checked.status, 200, text);
        assert.equal(JSON.parse(text).login, "dwho");
      });

      await t.step("a ticket is good once: reused, it is CasServerInvalidTicket", async () => {
        const { ticket } = await cas.serviceTicket(SERVICE, "rtyler");
        await expectLoggedIn(await casLogin(ctx, { service: SERVICE, ticket }), "rtyler");
        await expectError(
          await casLogin(ctx, { service: SERVICE, ticket }),
          403,
          "CasServerInvalidTicket",
          /INVALID_TICKET/,
        );
      });

      await t.step(
        "a ticket validated for another service is CasServerInvalidService, and is then spent",
        async () => {
          const { ticket } = await cas.serviceTicket(SERVICE, "dwho");
          await expectError(
            await casLogin(ctx, { service: OTHER_SERVICE, ticket }),
            403,
            "CasServerInvalidService",
            /INVALID_SERVICE/,
          );
          await expectError(
            await casLogin(ctx, { service: SERVICE, ticket }),
            403,
            "CasServerInvalidTicket",
          );
        },
      );

      await t.step(
        "an unknown ticket, or one that is no service ticket: CasServerInvalidTicket",
        async () => {
          for (const ticket of ["ST-unknown", "PT-1-proxy", "TGT-1-granting"]) {
            await expectError(
              await casLogin(ctx, { service: SERVICE, ticket }),
              403,
              "CasServerInvalidTicket",
              /INVALID_TICKET/,
            );
          }
        },
      );

      await t.step(
        "a CAS user who is no CTI user (a web service user's login): 401 UserNotFound",
        async () => {
          const { ticket } = await cas.serviceTicket(SERVICE, "msmith");
          await expectError(
            await casLogin(ctx, { service: SERVICE, ticket }),
            401,
            "UserNotFound",
            /msmith/,
          );
        },
      );

      await t.step(
        "the user's session ended on the CAS server before validation: CasServerInternalError",
        async () => {
          const { ticket, sessionId } = await cas.serviceTicket(SERVICE, "dwho");
          await cas.endSession(sessionId);
          await expectError(
            await casLogin(ctx, { service: SERVICE, ticket }),
            403,
            "CasServerInternalError",
            /INTERNAL_ERROR/,
          );
        },
      );

      await t.step(
        "a missing or empty service or ticket: 403 CasServerInvalidParameter",
        async () => {
          const queries: Record<string, string>[] = [
            { ticket: "ST-unknown" },
            { service: SERVICE },
            {},
            { service: "", ticket: "ST-unknown" },
            { service: SERVICE, ticket: "" },
          ];
          for (const query of queries) {
            await expectError(await casLogin(ctx, query), 403, "CasServerInvalidParameter");
          }
        },
      );

      await t.step("SVC_CAS_URL with a trailing slash works alike", async () => {
        const slashed = await setup({ SVC_CAS_URL: `${cas.url}/` });
        try {
          await ctiUser(slashed, "dwho");
          const { ticket } = await cas.serviceTicket(SERVICE, "dwho");
          await expectLoggedIn(await casLogin(slashed, { service: SERVICE, ticket }), "dwho");
        } finally {
          slashed.services.store.close();
        }
      });

      await t.step(
        "SVC_CAS_URL at the portal's root (an HTML page, not CAS XML): CasServerInvalidResponse",
        async () => {
          const misplaced = await setup({ SVC_CAS_URL: cas.portalUrl });
          try {
            await ctiUser(misplaced, "dwho");
            const { ticket } = await cas.serviceTicket(SERVICE, "dwho");
            await expectError(
              await casLogin(misplaced, { service: SERVICE, ticket }),
              403,
              "CasServerInvalidResponse",
              /not XML/,
            );
            // The ticket was not spent there: the right URL still accepts it.
            await expectLoggedIn(await casLogin(ctx, { service: SERVICE, ticket }), "dwho");
          } finally {
            misplaced.services.store.close();
          }
        },
      );
    } catch (error) {
      console.error(cas.logs.slice(-40).join("\n"));
      throw error;
    } finally {
      ctx.services.store.close();
      await cas.stop();
    }
  },
);

Deno.test("GET /auth/cas without SVC_CAS_URL: 403 CasServerUrlNotSet", async () => {
  const ctx = await setup();
  try {
    await ctiUser(ctx, "dwho");
    const queries: Record<string, string>[] = [{ service: SERVICE, ticket: "ST-1" }, {}];
    for (const query of queries) {
      await expectError(await casLogin(ctx, query), 403, "CasServerUrlNotSet");
    }
  } finally {
    ctx.services.store.close();
  }
});

Deno.test("GET /auth/cas with an unreachable CAS server: CasServerInvalidResponse", async () => {
  const ctx = await setup({ SVC_CAS_URL: `http://127.0.0.1:${await closedPort()}/cas` });
  try {
    await ctiUser(ctx, "dwho");
    await expectError(
      await casLogin(ctx, { service: SERVICE, ticket: "ST-1" }),
      403,
      "CasServerInvalidResponse",
      /unreachable/,
    );
  } finally {
    ctx.services.store.close();
  }
});

/** Asserts that `parse` throws the 403 ApiError `code` with a message matching `message`. */
function expectCasError(parse: () => unknown, code: string, message: RegExp = /./) {
  assert.throws(parse, (error: unknown) => {
    assert.ok(error instanceof ApiError, String(error));
    assert.equal(error.status, 403);
    assert.equal(error.code, code);
    assert.match(error.message, message);
    return true;
  });
}

async function expectCasRejection(promise: Promise<unknown>, code: string, message = /./) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ApiError, String(error));
    assert.equal(error.status, 403);
    assert.equal(error.code, code);
    assert.match(error.message, message);
    return true;
  });
}

/** LemonLDAP::NG 2.16's failure answer for `code`, byte for byte (its template). */
const lemonFailure = (code: string, text: string) =>
  `<cas:serviceResponse xmlns:cas='http://www.yale.edu/tp/cas'>
\t<cas:authenticationFailure code="${code}">
\t\t${text}
\t</cas:authenticationFailure>
</cas:serviceResponse>
`;

/** Answers of `/cas/serviceValidate` captured from the peer (LemonLDAP::NG 2.16.1, Debian 12). */
const CAPTURED = {
  success: `<cas:serviceResponse xmlns:cas='http://www.yale.edu/tp/cas'>
\t<cas:authenticationSuccess>
\t\t<cas:user>dwho</cas:user>
\t\t<cas:attributes>
\t\t</cas:attributes>
\t</cas:authenticationSuccess>
</cas:serviceResponse>
`,
  missingParameters: lemonFailure(
    "INVALID_REQUEST",
    "Missing mandatory parameters (service, ticket)",
  ),
  notFound: lemonFailure("INVALID_TICKET", "Ticket not found"),
  notServiceTicket: lemonFailure("INVALID_TICKET", "Provided ticket is not a service ticket"),
  otherService: lemonFailure("INVALID_SERVICE", "Submitted service does not match initial service"),
  noSession: lemonFailure("INTERNAL_ERROR", "No session associated to ticket"),
  /** `/cas/validate` (CAS 1.0) answers plain text. */
  cas1: "no\n\n",
};

Deno.test("CAS validation answers and the spec's codes", async (t) => {
  await t.step("LemonLDAP::NG's success names the user", () => {
    assert.equal(parseCasResponse(CAPTURED.success), "dwho");
  });

  await t.step("LemonLDAP::NG's failures map to the spec's codes", () => {
    expectCasError(
      () => parseCasResponse(CAPTURED.missingParameters),
      "CasServerInvalidRequest",
      /^the CAS server refused the ticket: INVALID_REQUEST \(Missing mandatory parameters \(service, ticket\)\)$/,
    );
    expectCasError(
      () => parseCasResponse(CAPTURED.notFound),
      "CasServerInvalidTicket",
      /Ticket not found/,
    );
    expectCasError(
      () => parseCasResponse(CAPTURED.notServiceTicket),
      "CasServerInvalidTicket",
      /not a service ticket/,
    );
    expectCasError(() => parseCasResponse(CAPTURED.otherService), "CasServerInvalidService");
    expectCasError(() => parseCasResponse(CAPTURED.noSession), "CasServerInternalError");
  });

  await t.step("every code of the CAS protocol has its error", () => {
    assert.deepEqual(CAS_FAILURE_CODES, {
      INVALID_REQUEST: "CasServerInvalidRequest",
      INVALID_TICKET_SPEC: "CasServerInvalidTicketSpec",
      UNAUTHORIZED_SERVICE_PROXY: "CasServerUnauthorizedServiceProxy",
      INVALID_PROXY_CALLBACK: "CasServerInvalidProxyCallback",
      INVALID_TICKET: "CasServerInvalidTicket",
      INVALID_SERVICE: "CasServerInvalidService",
      INTERNAL_ERROR: "CasServerInternalError",
    });
    for (const [code, error] of Object.entries(CAS_FAILURE_CODES)) {
      expectCasError(() => parseCasResponse(lemonFailure(code, "why")), error, /\(why\)$/);
    }
  });

  await t.step("other servers' forms: XML declaration, default namespace, CDATA, entities", () => {
    const apereo = `<?xml version="1.0" encoding="UTF-8"?>
<!-- a comment -->
<cas:serviceResponse xmlns:cas="http://www.yale.edu/tp/cas">
  <cas:authenticationSuccess>
    <cas:user>o&apos;brien &amp; &lt;co&gt; &#233;&#x20AC;</cas:user>
    <cas:attributes><cas:mail>x@example.com</cas:mail></cas:attributes>
  </cas:authenticationSuccess>
</cas:serviceResponse>`;
    assert.equal(parseCasResponse(apereo), "o'brien & <co> é€");
    const unprefixed = `<serviceResponse xmlns='http://www.yale.edu/tp/cas'>
<authenticationSuccess><user><![CDATA[a&b]]></user></authenticationSuccess></serviceResponse>`;
    assert.equal(parseCasResponse(unprefixed), "a&b");
    const otherPrefix = `<x:serviceResponse xmlns:x="http://www.yale.edu/tp/cas">
<x:authenticationFailure code = ' INVALID_TICKET '>Ticket &quot;ST-1&quot; not recognized</x:authenticationFailure>
</x:serviceResponse>`;
    expectCasError(
      () => parseCasResponse(otherPrefix),
      "CasServerInvalidTicket",
      /Ticket "ST-1" not recognized/,
    );
  });

  await t.step("anything else is CasServerInvalidResponse", () => {
    const cases: [string, RegExp][] = [
      [CAPTURED.cas1, /not XML: text outside the root element/],
      ["", /not XML: no root element/],
      ['<!DOCTYPE html>\n<html xmlns="http://www.w3.org/1999/xhtml"></html>', /document type/],
      ["<html><body>Bad gateway</body></html>", /root element is <html>/],
      // The right names in no namespace, or in another one.
      [CAPTURED.success.replace(" xmlns:cas='http://www.yale.edu/tp/cas'", ""), /unbound prefix/],
      [CAPTURED.success.replace("www.yale.edu", "example.com"), /not a CAS serviceResponse/],
      [lemonFailure("UNKNOWN_THING", "why"), /unknown CAS failure code "UNKNOWN_THING"/],
      [lemonFailure("", "why"), /unknown CAS failure code ""/],
      [CAPTURED.success.replace("<cas:user>dwho</cas:user>", "<cas:user> </cas:user>"), /no user/],
      [CAPTURED.success.replace("<cas:user>dwho</cas:user>", ""), /no user/],
      [CAPTURED.success.replace("</cas:user>", ""), /closes <cas:user>/],
      [CAPTURED.success.replace("dwho", "d&who"), /bare "&"/],
      [CAPTURED.success.replace("dwho", "d&eacute;who"), /undefined entity &eacute;/],
      [CAPTURED.success.replace("dwho", "d&constructor;who"), /undefined entity &constructor;/],
      [CAPTURED.success.replace("dwho", "d&#0;who"), /not an XML character/],
      [CAPTURED.success + "<cas:serviceResponse/>", /second root element/],
      [CAPTURED.success.slice(0, 80), /not closed|unterminated/],
      ["<cas:serviceResponse xmlns:cas='http://www.yale.edu/tp/cas'/>", /empty serviceResponse/],
      [
        "<cas:serviceResponse xmlns:cas='http://www.yale.edu/tp/cas'><cas:proxySuccess/></cas:serviceResponse>",
        /unexpected <cas:proxySuccess>/,
      ],
      ["<a b='1' b='2'/>", /repeated/],
      ["<a b=1/>", /bad attribute/],
      ["<a b='1'c='2'/>", /bad attribute/],
    ];
    for (const [text, message] of cases) {
      expectCasError(() => parseCasResponse(text), "CasServerInvalidResponse", message);
    }
  });

  await t.step("parameters that cannot be sent are CasServerInvalidParameter", async () => {
    // A closed port: were anything sent, the error would be CasServerInvalidResponse.
    const casUrl = `http://127.0.0.1:${await closedPort()}/cas`;
    const cases: [string, string, RegExp][] = [
      ["", "ST-1", /service is empty/],
      [SERVICE, "", /ticket is empty/],
      [SERVICE, "ST-1\nX-Injected: 1", /ticket holds control characters/],
      [`${SERVICE}\u0000`, "ST-1", /service holds control characters/],
      [SERVICE, `ST-${"x".repeat(MAX_PARAMETER_LENGTH)}`, /ticket is longer than 4096/],
    ];
    for (const [service, ticket, message] of cases) {
      await expectCasRejection(
        validateCasTicket(casUrl, service, ticket),
        "CasServerInvalidParameter",
        message,
      );
    }
    await expectCasRejection(
      validateCasTicket(casUrl, SERVICE, "ST-1"),
      "CasServerInvalidResponse",
      /unreachable/,
    );
  });
});

Deno.test("validateCasTicket: a server that does not answer in time, or not with 200", async (t) => {
  // A TCP listener that accepts and never answers: a CAS server that hangs.
  const silent = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of silent) held.push(conn);
  })();
  // A front proxy whose CAS server is down, and one that moved: no CAS server behind either.
  const proxy = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) =>
      new URL(request.url).pathname.startsWith("/moved/")
        ? new Response(null, { status: 302, headers: { Location: "/cas/serviceValidate" } })
        : new Response("<html><body>502 Bad Gateway</body></html>", {
          status: 502,
          headers: { "Content-Type": "text/html" },
        }),
  );
  try {
    await t.step("no answer within the timeout", async () => {
      const { port } = silent.addr as Deno.NetAddr;
      const started = performance.now();
      await expectCasRejection(
        validateCasTicket(`http://127.0.0.1:${port}/cas`, SERVICE, "ST-1", { timeoutMs: 300 }),
        "CasServerInvalidResponse",
        /no answer within 300 ms/,
      );
      assert.ok(performance.now() - started < 5_000);
    });

    await t.step("an HTTP status other than 200, redirects included", async () => {
      const base = `http://127.0.0.1:${proxy.addr.port}`;
      await expectCasRejection(
        validateCasTicket(`${base}/cas`, SERVICE, "ST-1"),
        "CasServerInvalidResponse",
        /HTTP status 502 from http:\/\/127\.0\.0\.1:\d+\/cas\/serviceValidate$/,
      );
      await expectCasRejection(
        validateCasTicket(`${base}/moved/cas`, SERVICE, "ST-1"),
        "CasServerInvalidResponse",
        /HTTP status 302/,
      );
    });
  } finally {
    silent.close();
    await accepting.catch(() => {});
    for (const conn of held) conn.close();
    await proxy.shutdown();
  }
});
