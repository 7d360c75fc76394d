/**
 * The upgrade of a store written before rights profiles (lib/rights/migration.ts): a store file is
 * written at test time by the code of the last commit before them (`git archive` of
 * {@link BEFORE}, run in a process of its own), then opened by this version's start
 * (`prepareStore`). Its supervisors (`supervision_enabled` true, with a username) get an admin
 * profile, every user's phone becomes watchable, and the migration runs once: a profile taken
 * away afterwards stays away, a user made since gets none. Without git or that commit (a copy of
 * the sources outside their repository) the test says so and passes.
 */
import assert from "node:assert/strict";
import { prepareStore } from "../../lib/bootstrap.ts";
import { deleteProfile, listProfiles, profileOf } from "../../lib/rights/profiles.ts";
import { progressKey } from "../../lib/rights/migration.ts";
import { createUser, users } from "../../lib/store/users.ts";
import { setup } from "../helpers.ts";

/** The last commit of main before rights profiles (issue 45). */
const BEFORE = "bc01df7";
const ROOT = new URL("../../", import.meta.url).pathname;

/** What the earlier version writes: its users, as its own code makes them. */
const WRITER = `
import { Store } from "./lib/store/store.ts";
import { createUser } from "./lib/store/users.ts";
const store = await Store.open(Deno.args[0]);
await createUser(store, { firstname: "Sam", username: "sam", supervision_enabled: true });
await createUser(store, { firstname: "Pat", username: "pat" }); // that version's default: false
await createUser(store, { firstname: "Roger", supervision_enabled: true }); // no username
for (let n = 0; n < 90; n++) {
  await createUser(store, { firstname: "U", username: "u" + n, supervision_enabled: n % 3 === 0 });
}
store.close();
`;

async function run(command: string, args: string[], cwd = ROOT): Promise<boolean> {
  try {
    const output = await new Deno.Command(command, { args, cwd, stdout: "null", stderr: "piped" })
      .output();
    if (!output.success) console.error(new TextDecoder().decode(output.stderr));
    return output.success;
  } catch {
    return false;
  }
}

/** A store file written by {@link BEFORE}'s code; null when its sources cannot be had. */
async function storeOfBefore(folder: string): Promise<string | null> {
  const archive = `${folder}/before.tar`;
  if (!await run("git", ["archive", "--output", archive, BEFORE])) return null;
  const sources = `${folder}/before`;
  await Deno.mkdir(sources);
  assert.ok(await run("tar", ["-xf", archive, "-C", sources]));
  await Deno.writeTextFile(`${sources}/write_store.ts`, WRITER);
  const file = `${folder}/before.kv`;
  assert.ok(
    await run(Deno.execPath(), ["run", "-A", "--unstable-kv", "write_store.ts", file], sources),
    "the earlier version wrote its store",
  );
  return file;
}

Deno.test("a store written before rights profiles: supervisors become admins, once", async () => {
  const folder = await Deno.makeTempDir();
  try {
    const file = await storeOfBefore(folder);
    if (!file) {
      console.log(`  skipped: no git or no commit ${BEFORE} here to write the earlier store with`);
      return;
    }
    const ctx = await setup({ SVC_KV: file }); // this version's start: the migration runs
    const { store } = ctx.services;
    try {
      const all = await users.all(store);
      assert.equal(all.length, 93);
      const byName = new Map(all.map((user) => [user.username ?? user.firstname, user]));
      const admins = (await listProfiles(store)).map((profile) => profile.id);
      const expected = [byName.get("sam")!.id];
      for (let n = 0; n < 90; n += 3) expected.push(byName.get(`u${n}`)!.id);
      assert.deepEqual(admins, expected, "the supervisors with a username, and only they");
      assert.ok((await listProfiles(store)).every((profile) => profile.profile === "admin"));
      assert.ok(all.every((user) => user.supervision_enabled), "every phone may be watched");
      assert.equal((await store.get<{ done: boolean }>(progressKey)).value?.done, true);
      const logged = ctx.logs.find((line) => line.includes("admin rights profile"));
      assert.ok(logged, "the migration says what it did");

      // once: a profile taken away stays away, a user made since gets none, at the next start
      await deleteProfile(store, byName.get("sam")!.id);
      const since = await createUser(store, { firstname: "New", username: "newcomer" });
      await prepareStore(ctx.services);
      assert.equal(await profileOf(store, byName.get("sam")!.id), null);
      assert.equal(await profileOf(store, since.id), null);
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(folder, { recursive: true });
  }
});

Deno.test("a new store: nothing to migrate, and its users are made by this version", async () => {
  const ctx = await setup();
  try {
    assert.equal(
      (await ctx.services.store.get<{ done: boolean }>(progressKey)).value?.done,
      true,
    );
    const user = await createUser(ctx.services.store, { firstname: "Roger", username: "roger" });
    assert.equal(user.supervision_enabled, true);
    await prepareStore(ctx.services);
    assert.deepEqual(await listProfiles(ctx.services.store), []);
  } finally {
    ctx.services.store.close();
  }
});
