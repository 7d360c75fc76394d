/**
 * The chat messages' store (lib/store/chat_messages.ts): the backlog bound under concurrent sends,
 * a message claimed or delivered by one racer only, and messages Deno KV expired by itself counted
 * out of a full inbox.
 */
import assert from "node:assert/strict";
import {
  addChatMessage,
  CHAT_BACKLOG,
  CHAT_CLAIM_BATCH,
  type ChatMessageRecord,
  claimChatMessages,
  deliverChatMessage,
  waitingChatMessages,
} from "../../lib/store/chat_messages.ts";
import { Store } from "../../lib/store/store.ts";

const NOW = Date.UTC(2026, 0, 1);
const party = { username: "alice", phoneNumber: "", displayName: "", guid: "" };
const draft = (sequence: number) => ({ from: party, to: party, sequence, message: `m${sequence}` });

async function withStore(fn: (store: Store) => Promise<void>) {
  const store = await Store.open(":memory:");
  try {
    await fn(store);
  } finally {
    store.close();
  }
}

Deno.test("concurrent sends to an inbox one short of full: exactly one is stored", () =>
  withStore(async (store) => {
    for (let i = 0; i < CHAT_BACKLOG - 1; i++) await addChatMessage(store, 1, draft(i), NOW);
    const outcomes = await Promise.all(
      [1, 2, 3, 4, 5].map((i) => addChatMessage(store, 1, draft(10_000 + i), NOW)),
    );
    assert.equal(outcomes.filter((record) => record !== null).length, 1);
    assert.equal((await waitingChatMessages(store, 1, NOW)).length, CHAT_BACKLOG);
    const ids = (await waitingChatMessages(store, 1, NOW)).map((record) => record.id);
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
    assert.equal(new Set(ids).size, CHAT_BACKLOG);
  }));

Deno.test("claims and deliveries racing: each message is taken by one of them only", () =>
  withStore(async (store) => {
    const records: ChatMessageRecord[] = [];
    for (let i = 0; i < 2 * CHAT_CLAIM_BATCH + 5; i++) {
      records.push((await addChatMessage(store, 1, draft(i), NOW))!);
    }
    const claimAll = async () => {
      const ids: number[] = [];
      for (let more = true; more;) {
        const claimed = await claimChatMessages(store, 1, NOW);
        ids.push(...claimed.messages.map((record) => record.id));
        more = claimed.more;
      }
      return ids;
    };
    const [first, second, delivered] = await Promise.all([
      claimAll(),
      claimAll(),
      Promise.all(records.map(async (record) => {
        return await deliverChatMessage(store, 1, record.id) ? [record.id] : [];
      })),
    ]);
    const taken = [...first, ...second, ...delivered.flat()];
    assert.equal(taken.length, records.length);
    assert.equal(new Set(taken).size, records.length);
    assert.deepEqual(await waitingChatMessages(store, 1, NOW), []);
    // a delivered message is gone: delivering it again answers false, a new one takes the next id
    assert.equal(await deliverChatMessage(store, 1, records[0]!.id), false);
    assert.equal((await addChatMessage(store, 1, draft(0), NOW))!.id, records.length + 1);
  }));

Deno.test("a full inbox whose messages Deno KV removed by itself takes messages again", () =>
  withStore(async (store) => {
    for (let i = 0; i < CHAT_BACKLOG; i++) await addChatMessage(store, 1, draft(i), NOW);
    assert.equal(await addChatMessage(store, 1, draft(-1), NOW), null);
    // what Deno KV's expiry does: the message keys go, the inbox's count stays
    const entries = await store.list({ prefix: ["chat_messages", 1] }, { limit: 10 });
    for (const entry of entries) await store.delete(entry.key);
    const record = await addChatMessage(store, 1, draft(-2), NOW);
    assert.equal(record?.message, "m-2");
    assert.equal((await waitingChatMessages(store, 1, NOW)).length, CHAT_BACKLOG - 10 + 1);
    // the count was corrected: the next nine fit, the tenth does not
    for (let i = 0; i < 9; i++) assert.ok(await addChatMessage(store, 1, draft(-3), NOW));
    assert.equal(await addChatMessage(store, 1, draft(-4), NOW), null);
  }));
