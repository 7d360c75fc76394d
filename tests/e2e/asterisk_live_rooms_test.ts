/**
 * Meeting rooms on a REAL Asterisk with three real SIP phones (baresip), where both are installed
 * (skipped with a one-line notice otherwise; run it under `flock /tmp/svc-asterisk-live.lock`
 * where several people share the machine): alice's personal room made through the 2.0 API; alice
 * and bob join by its number and PIN (typed as DTMF), carol's wrong PIN is refused; the owner lists
 * the participants, mutes bob, records the room (a file is written), kicks bob; the room is
 * deleted while alice and carol are in it (both hung up, its number leads nowhere); made again at
 * run time, it is joined again and Asterisk is restarted mid-conference: svc then reports every
 * participant gone, none left behind (docs/meetingrooms.md).
 */
import assert from "node:assert/strict";
import type { PlatformEvent } from "../../lib/platform/port.ts";
import type { RoomEvent } from "../../lib/platform/rooms.ts";
import type { UserRecord } from "../../lib/store/users.ts";
import { livePeers } from "../peers/live_peers.ts";
import { scenarioWorld } from "../lib/platform/fixtures.ts";
import { capture } from "../lib/platform/scenario_runner.ts";
import { ctiToken } from "../daemons/agentd/fixtures.ts";
import { v2 } from "../routes/meetingrooms_fixtures.ts";
import { calld } from "../daemons/calld/fixtures.ts";
import { startRecordedPbx, svcOnPbx } from "./recorded_pbx.ts";
import { quietManager } from "../peers/asterisk_pbx.ts";
import { sleep, until } from "./svc_http.ts";

const { prefix: PREFIX, missing } = livePeers("asterisk_live_rooms_test");
const ROOMS = "/config/meetingrooms";

Deno.test({
  name: "on a real Asterisk: a personal room joined by number and PIN, muted, kicked, recorded, " +
    "deleted in use, and Asterisk restarted mid-conference",
  ignore: missing,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const recordings = await Deno.makeTempDir({ prefix: "svc-rooms-rec-" });
    await Deno.chmod(recordings, 0o777);
    const { pbx, recorder, phones, stop } = await startRecordedPbx({
      prefix: PREFIX!,
      config: { "manager.conf": quietManager },
      svc: (port, pbx) => svcOnPbx(port, pbx, scenarioWorld),
      file: "pjsip_svc.conf",
      phones: Object.fromEntries(
        ["alice", "bob", "carol"].map((user) => [user, { user, answerMode: "auto" as const }]),
      ),
      registerMs: 20_000,
    });
    const s = await svcOnPbx(recorder.port, pbx, scenarioWorld, {
      SVC_ASTERISK_RECORDINGS_DIR: recordings,
    });
    try {
      const { w, ctx, platform } = s;
      const alice = v2(ctx, await ctiToken(ctx, w.alice));
      const aliceCalld = calld({ ctx }, await ctiToken(ctx, w.alice));
      const made = await alice.expect<{ id: string; number: string }>(
        201,
        "POST",
        `${ROOMS}/personal`,
        { displayName: "Weekly", userPin: "1234" },
      );
      let room = made;
      const events: PlatformEvent[] = capture(ctx);
      platform.start();
      await platform.firstSync();
      const settle = async (ms = 600) => {
        await sleep(ms);
        await platform.settled();
      };
      const people = () =>
        platform.rooms().then((rooms) =>
          rooms.flatMap((one) => one.participants.map((p) => `${p.username}${p.muted ? "*" : ""}`))
        );
      /** `user`'s phone is called to the room's number (it answers), then types `pin` and `#`. */
      const join = async (user: UserRecord, pin: string) => {
        await platform.dialNumber(user, room.number, {});
        await sleep(1500); // answered, the room's PIN prompt playing
        await phones[user.username!]!.ctrl.sendDtmf(`${pin}#`);
        await settle(2500);
      };
      /** Who joined and left (talking, from Asterisk's talk detection, is left out). */
      const roomEvents = () =>
        events.filter((event): event is RoomEvent =>
          event.kind === "room" && (event.event === "joined" || event.event === "left")
        )
          .map((event) => `${event.event} ${event.participant?.username ?? ""}`);

      await t.step(
        "alice and bob join by number and PIN; carol's wrong PIN is refused",
        async () => {
          await join(w.alice, "1234");
          await join(w.bob, "1234");
          assert.deepEqual(await people(), ["alice", "bob"]);
          await platform.dialNumber(w.carol, room.number, {});
          await sleep(1500);
          for (const wrong of ["1111#", "2222#", "3333#"]) {
            await phones.carol!.ctrl.sendDtmf(wrong);
            await sleep(1500);
          }
          await until(
            async () => !(await platform.liveCalls()).some((call) => call.userId === w.carol.id),
            15_000,
            "ConfBridge hangs carol up",
          );
          assert.deepEqual(await people(), ["alice", "bob"]);
        },
      );

      await t.step("the owner lists, mutes bob, records the room, kicks bob", async () => {
        const base = `/users/me/meetings/${room.id}`;
        const listed = await aliceCalld.expect<{ items: { id: string; user_uuid: string }[] }>(
          200,
          "GET",
          `${base}/participants`,
        );
        assert.deepEqual(listed.items.map((item) => item.user_uuid), [w.alice.uuid, w.bob.uuid]);
        const bob = listed.items[1]!.id;
        await aliceCalld.expect(204, "PUT", `${base}/participants/${bob}/mute`);
        await settle();
        assert.deepEqual(await people(), ["alice", "bob*"]);
        await aliceCalld.expect(204, "PUT", `${base}/participants/${bob}/unmute`);
        await aliceCalld.expect(204, "POST", `${base}/record`);
        await settle(2000);
        await aliceCalld.expect(204, "DELETE", `${base}/record`);
        await settle();
        const files = [...Deno.readDirSync(recordings)].map((entry) => entry.name);
        assert.equal(files.length, 1, `one recording: ${files}`);
        // ConfBridge appends its own time to the file's name
        assert.match(files[0]!, new RegExp(`^meeting-${room.id}-\\d+-\\d+\\.wav$`));
        assert.ok(Deno.statSync(`${recordings}/${files[0]}`).size > 1000, "it holds sound");
        await aliceCalld.expect(204, "DELETE", `${base}/participants/${bob}`);
        await settle();
        assert.deepEqual(await people(), ["alice"]);
      });

      await t.step("deleted while alice and carol are in it: both hung up", async () => {
        await join(w.carol, "1234");
        assert.deepEqual(await people(), ["alice", "carol"]);
        await alice.expect(204, "DELETE", `${ROOMS}/personal/${room.id}`);
        await until(
          async () => (await platform.liveCalls()).length === 0,
          10_000,
          "every call ended",
        );
        assert.deepEqual(await people(), []);
        const tail = roomEvents().slice(-2).sort();
        assert.deepEqual(tail, ["left alice", "left carol"]);
      });

      await t.step("made again at run time; Asterisk restarted mid-conference", async () => {
        room = await alice.expect(201, "POST", `${ROOMS}/personal`, {
          displayName: "Again",
          userPin: "4321",
        });
        assert.equal(room.number, made.number, "its number was free again");
        await settle(2500); // svc writes its files and reloads the dialplan and ConfBridge
        await join(w.alice, "4321");
        await join(w.bob, "4321");
        assert.deepEqual(await people(), ["alice", "bob"]);
        const before = roomEvents().length;
        await pbx.halt();
        await pbx.start();
        await until(() => platform.reachable(), 30_000, "svc reconnected");
        await settle(2000);
        assert.deepEqual(await people(), [], "nobody left in the room");
        assert.deepEqual(roomEvents().slice(before).sort(), ["left alice", "left bob"]);
      });
    } finally {
      await s.close();
      await stop();
      await Deno.remove(recordings, { recursive: true }).catch(() => {});
    }
  },
});
