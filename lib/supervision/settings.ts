/**
 * The supervision settings (docs/supervision.md, the README's Configuration table): a value for
 * every queue with overrides by queue name (`SVC_SUPERVISION_TIMEZONE`,
 * `SVC_SUPERVISION_SERVICE_LEVEL`), the short-abandon threshold and the days kept. `lib/config.ts`
 * reads them with {@link perQueueSetting}.
 */

/** A value for every queue, and the queues (by name) that have another. */
export interface PerQueue<T> {
  default: T;
  byQueue: Readonly<Record<string, T>>;
}

export interface SupervisionSettings {
  /** The time zone whose midnight starts a queue's day (agents' days: the default one). */
  timeZone: PerQueue<string>;
  /** A call answered within this many seconds of waiting is within the service level. */
  serviceLevelSeconds: PerQueue<number>;
  /** A call abandoned within this many seconds of waiting is a short abandon. */
  shortAbandonSeconds: number;
  /** How many days of counters are kept (today included). */
  retentionDays: number;
}

/** The value of `setting` for the queue named `queueName` (unknown: the default). */
export const forQueue = <T>(setting: PerQueue<T>, queueName: string | undefined): T =>
  (queueName === undefined ? undefined : setting.byQueue[queueName]) ?? setting.default;

/** Queue names as the configuration daemon allows them. */
const QUEUE_NAME = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Reads `value[,name=value…]`: a default (optional: `fallback` otherwise) and overrides by queue
 * name, separated by commas, e.g. `20,sales=30,support=10`. Throws with a message naming what is
 * wrong.
 *
 * @example
 * perQueueSetting("20,sales=30", "20", Number); // { default: 20, byQueue: { sales: 30 } }
 */
export function perQueueSetting<T>(
  raw: string,
  fallback: string,
  parse: (value: string) => T,
): PerQueue<T> {
  let defaultValue: T | undefined;
  const byQueue: Record<string, T> = {};
  for (const item of raw.split(",").map((part) => part.trim()).filter((part) => part)) {
    const equals = item.indexOf("=");
    if (equals < 0) {
      if (defaultValue !== undefined) throw new Error(`gives two defaults: ${raw}`);
      defaultValue = parse(item);
      continue;
    }
    const name = item.slice(0, equals).trim();
    if (!QUEUE_NAME.test(name)) throw new Error(`${JSON.stringify(name)} is no queue name`);
    if (name in byQueue) throw new Error(`names the queue ${name} twice`);
    byQueue[name] = parse(item.slice(equals + 1).trim());
  }
  return { default: defaultValue ?? parse(fallback), byQueue };
}

/**
 * An IANA time zone (`Europe/Paris`, `UTC`), in its canonical spelling; throws for another.
 *
 * @example
 * timeZone("europe/paris"); // "Europe/Paris"
 */
export function timeZone(raw: string): string {
  if (raw === "UTC") return raw;
  try {
    return Temporal.Now.zonedDateTimeISO(raw).timeZoneId;
  } catch {
    throw new Error(`${JSON.stringify(raw)} is no time zone (e.g. UTC, Europe/Paris)`);
  }
}
