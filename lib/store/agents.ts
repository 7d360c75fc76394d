/**
 * Agents: the configuration daemon's `/1.1/agents` records, the people who take queue calls. An
 * agent's queues are kept on the queues (`queues.members`, see `queues.ts`); the agent daemon and
 * the telephony simulator find agents here by id or by number.
 */
import { hashPassword } from "../auth/passwords.ts";
import { Collection } from "./records.ts";
import type { Store } from "./store.ts";

export interface AgentRecord {
  id: number;
  /** Digits, unique; it never changes once created. */
  number: string;
  firstname: string | null;
  lastname: string | null;
  language: string | null;
  description: string | null;
  preprocess_subroutine: string | null;
  /** The write-only `password`, hashed; null when the agent has none. */
  password_hash: string | null;
}

export const agents = new Collection<AgentRecord>("agents", { number: (agent) => agent.number });

/** The fields a new agent may be given; the others are null. */
export type NewAgent =
  & Pick<AgentRecord, "number">
  & Partial<Omit<AgentRecord, "id" | "number" | "password_hash">>
  & { password?: string | null };

/** The stored form of a password: its hash, or null for none. */
export const agentPasswordHash = (password: string | null | undefined) =>
  password ? hashPassword(password) : Promise.resolve(null);

/** A complete agent record with null for every field not given. */
export async function buildAgent(id: number, input: NewAgent): Promise<AgentRecord> {
  const { password, ...fields } = input;
  return {
    id,
    firstname: null,
    lastname: null,
    language: null,
    description: null,
    preprocess_subroutine: null,
    ...fields,
    password_hash: await agentPasswordHash(password),
  };
}

/**
 * Creates an agent; throws `UniqueConflict` when the number is taken.
 *
 * @example
 * const agent = await createAgent(store, { number: "8000", firstname: "Alice" });
 */
export async function createAgent(store: Store, input: NewAgent): Promise<AgentRecord> {
  return await agents.put(store, await buildAgent(await agents.nextId(store), input));
}

export const getAgent = (store: Store, id: number) => agents.get(store, id);
export const findAgentByNumber = (store: Store, number: string) =>
  agents.findBy(store, "number", number);
/** Every agent, in id order. */
export const listAgents = (store: Store) => agents.all(store);
