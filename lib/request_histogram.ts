/**
 * The histogram of answered requests (`svc_http_request_duration_seconds`, docs/metrics.md), by
 * method, route template and status. prom-client's `Histogram` turns the labels object of every
 * observation into a key string and finds the bucket through a property named by the bound (0.3 µs
 * an observation: a tenth of the CPU of the cheapest route, the contacts list, bench/README.md);
 * this one finds the series through maps keyed by the label values and counts in an array.
 * prom-client's registry still writes the exposition: {@link RequestHistogram.get} answers what a
 * prom-client `Histogram` given the same observations answers (the same lines in the same order,
 * `tests/lib/request_histogram_test.ts`).
 */
import type { Metric, Registry } from "./prom_client.ts";

/** The label names, in the order of the exposition. */
type LabelName = "method" | "route" | "status";

/** One series: its labels and, per bucket, the observations that fell in it (not cumulated). */
interface Series {
  readonly labels: Record<LabelName, string>;
  /** One count per bound, then the observations above the last bound. */
  readonly counts: number[];
  sum: number;
  count: number;
}

/** One value of prom-client's metric format, as its registry writes it. */
interface Value {
  labels: Record<string, string | number>;
  sharedLabels?: Record<LabelName, string>;
  value: number;
  metricName: string;
}

export class RequestHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  /** route → method → status → series: no key is built per observation. */
  readonly #byRoute = new Map<string, Map<string, Map<number, Series>>>();
  /** The series in the order they first appeared, the order of the exposition. */
  #series: Series[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: readonly number[],
    registers: Registry[],
  ) {
    // prom-client's registry asks a metric for `name`, `help`, `type`, `get()`, `reset()` only
    for (const registry of registers) registry.registerMetric(this as unknown as Metric);
  }

  /** Counts one request of `method` on `route` answered with `status` in `seconds`. */
  observe(method: string, route: string, status: number, seconds: number): void {
    if (!Number.isFinite(seconds)) throw new TypeError(`not a duration: ${seconds}`);
    let byMethod = this.#byRoute.get(route);
    if (!byMethod) this.#byRoute.set(route, byMethod = new Map());
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, byStatus = new Map());
    let series = byStatus.get(status);
    if (!series) {
      const labels = { method, route, status: String(status) };
      series = { labels, counts: new Array(this.buckets.length + 1).fill(0), sum: 0, count: 0 };
      byStatus.set(status, series);
      this.#series.push(series);
    }
    let bucket = 0;
    while (bucket < this.buckets.length && seconds > this.buckets[bucket]!) bucket++;
    series.counts[bucket]!++;
    series.sum += seconds;
    series.count++;
  }

  /** The values in prom-client's format: per series, its buckets cumulated, `+Inf`, sum, count. */
  get(): { name: string; help: string; type: string; aggregator: string; values: Value[] } {
    const bucketName = `${this.name}_bucket`;
    const values: Value[] = [];
    for (const { labels, counts, sum, count } of this.#series) {
      let below = 0;
      this.buckets.forEach((le, i) => {
        below += counts[i]!;
        values.push({ labels: { le }, sharedLabels: labels, value: below, metricName: bucketName });
      });
      values.push(
        { labels: { le: "+Inf" }, sharedLabels: labels, value: count, metricName: bucketName },
        { labels: {}, sharedLabels: labels, value: sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: labels, value: count, metricName: `${this.name}_count` },
      );
    }
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    };
  }

  /** Forgets every series (prom-client's `registry.resetMetrics()`). */
  reset(): void {
    this.#byRoute.clear();
    this.#series = [];
  }
}
