/**
 * ACL matching (decisions §2). An ACL is dot-separated words. In a granted ACL `*` matches a run of
 * characters without a dot (one word, possibly empty), `#` a run of one or more characters dots
 * included, a whole word `me` also the holder's own user id, and a leading `!` denies. Matching is
 * anchored and case-sensitive; the required ACL is taken literally.
 */

/** What every CTI user holds: the spec's `alias.ctiuser` list. */
export const CTI_USER_ALIAS = "alias.ctiuser";

export const CTI_USER_ACLS: readonly string[] = [
  "svc.rest.contact.personal.read",
  "svc.rest.contact.personal.create",
  "svc.rest.contact.personal.delete",
  "svc.rest.contact.personal.*.read",
  "svc.rest.contact.personal.*.update",
  "svc.rest.contact.personal.*.delete",
  "svc.rest.contact.export.personal.read",
  "svc.rest.contact.import.personal.create",
  "svc.rest.contact.display.personal.read",
  "svc.rest.call_qualification.queue.*.read",
  "svc.rest.call_qualification.csv.#.read",
  "svc.rest.call_qualification.create",
  "svc.rest.mobile.push.register.create",
  "svc.rest.config.meetingrooms.static.token.*.read",
  "svc.rest.config.meetingrooms.personal.token.*.read",
  "svc.rest.config.meetingrooms.temporary.token.*.read",
  "svc.rest.config.meetingrooms.personal.*.read",
  "svc.rest.config.meetingrooms.personal.create",
  "svc.rest.config.meetingrooms.personal.update",
  "svc.rest.config.meetingrooms.personal.*.delete",
  "svc.rest.config.#.read",
  "svc.rest.config.#.create",
  "svc.rest.config.#.update",
];

/**
 * The ACLs of a CTI user's token: `alias.ctiuser`, nothing else. What a supervisor may see and do
 * is its rights profile, read at each request (lib/rights/), never the token's: a profile changed
 * shows at once, without a new token. (Tokens issued by an earlier version may hold
 * `alias.supervisor`: it stands for nothing any more.)
 *
 * @example
 * ctiUserAcls(); // ["alias.ctiuser"]
 */
export function ctiUserAcls(): string[] {
  return [CTI_USER_ALIAS];
}

/** Replaces `alias.ctiuser` by the ACLs it stands for. */
export function expandAcls(acls: readonly string[]): string[] {
  return acls.flatMap((acl) => acl === CTI_USER_ALIAS ? CTI_USER_ACLS : [acl]);
}

const escape = (text: string) => text.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&");

function compileWord(word: string, userId: string): string {
  if (word === "me") return `(?:me|${escape(userId)})`;
  let pattern = "";
  for (const char of word) {
    pattern += char === "*" ? "[^.]*" : char === "#" ? ".+" : escape(char);
  }
  return pattern;
}

const MAX_CACHED = 10_000;
const compiled = new Map<string, RegExp>();

function pattern(acl: string, userId: string): RegExp {
  const words = acl.split(".");
  const cacheKey = words.includes("me") ? `${acl}\u0000${userId}` : acl;
  let regexp = compiled.get(cacheKey);
  if (!regexp) {
    if (compiled.size >= MAX_CACHED) compiled.clear();
    const safeId = userId.replaceAll(".", "_");
    regexp = new RegExp(`^${words.map((word) => compileWord(word, safeId)).join("\\.")}$`);
    compiled.set(cacheKey, regexp);
  }
  return regexp;
}

/**
 * True when one granted ACL matches `required`, and no denying one does.
 *
 * @example
 * isAllowed(["#", "!confd.#"], "auth.users.read", "1"); // true
 * isAllowed(["#", "!confd.#"], "confd.users.read", "1"); // false
 */
export function isAllowed(granted: readonly string[], required: string, userId: string): boolean {
  // a token's ACL list is one array, of one user, for as long as its verification is cached:
  // remember its answers by required ACL (no key built per request); a list asked for another
  // user starts again
  let cached = decisions.get(granted);
  if (cached?.userId !== userId) decisions.set(granted, cached = { userId, answers: new Map() });
  const { answers } = cached;
  let answer = answers.get(required);
  if (answer === undefined) {
    if (answers.size >= MAX_CACHED) answers.clear();
    answers.set(required, answer = decide(granted, required, userId));
  }
  return answer;
}

/** Answers of {@link isAllowed} per granted list (the same array object), for its latest user. */
const decisions = new WeakMap<
  readonly string[],
  { userId: string; answers: Map<string, boolean> }
>();

function decide(granted: readonly string[], required: string, userId: string): boolean {
  let allowed = false;
  for (const acl of expandAcls(granted)) {
    if (acl.startsWith("!")) {
      if (pattern(acl.slice(1), userId).test(required)) return false;
    } else if (!allowed && pattern(acl, userId).test(required)) {
      allowed = true;
    }
  }
  return allowed;
}
