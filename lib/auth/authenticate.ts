/**
 * Checking a login and password, as `/auth/login`, `/auth/webservice`, the 1.0 `connect` and
 * `/0.1/token` do: one answer for an unknown login and a wrong password, the login throttle
 * (decisions §2) counting the failures of every route that checks the same kind of login, and the
 * `svc_logins_total` metric counting every outcome.
 */
import { ApiError } from "../errors.ts";
import type { Metrics } from "../metrics.ts";
import { verifyPassword } from "./passwords.ts";
import type { LoginThrottle } from "./throttle.ts";

/** No login is longer; a longer one cannot match and must not reach the store's key limit. */
export const MAX_LOGIN_LENGTH = 256;

const invalidCredentials = () =>
  new ApiError(401, "InvalidCredentials", "invalid login and/or password");

/**
 * The user `find` answers for `login` if `password` is theirs; 401 `InvalidCredentials` otherwise
 * (an unknown login included), counted as a failure of `kind` by the throttle, which answers 429
 * `TooManyAttempts` first while the login has failed too often.
 *
 * @example
 * const user = await authenticate(services, "cti", body, (login) => findUserByUsername(store, login));
 */
export async function authenticate<T extends { password_hash: string | null }>(
  { throttle, metrics }: { throttle: LoginThrottle; metrics: Metrics },
  kind: "cti" | "webservice",
  { login, password }: { login: string; password: string },
  find: (login: string) => Promise<T | null>,
): Promise<T> {
  if (login.length > MAX_LOGIN_LENGTH) {
    metrics.login(kind, "password", "refused");
    throw invalidCredentials();
  }
  try {
    await throttle.check(kind, login);
  } catch (error) {
    if (error instanceof ApiError) metrics.login(kind, "password", "throttled");
    throw error;
  }
  const user = await find(login);
  if (!await verifyPassword(password, user?.password_hash ?? null) || !user) {
    metrics.login(kind, "password", "refused");
    await throttle.recordFailure(kind, login);
    throw invalidCredentials();
  }
  await throttle.reset(kind, login);
  metrics.login(kind, "password", "success");
  return user;
}
