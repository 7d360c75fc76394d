/**
 * Reads a Prometheus text exposition with a real parser (`parse-prometheus-text-format`, which
 * throws on a line that is not the format) into families of plain samples.
 *
 * That parser follows prom2json, which keeps one series per histogram: it folds the buckets of
 * every label set into one and drops their labels, counts and sums. So a histogram's lines are
 * parsed a second time without its `# TYPE` line, as plain samples: `<name>_bucket`,
 * `<name>_sum` and `<name>_count`, each with its labels.
 */
import parsePrometheusTextFormat from "parse-prometheus-text-format";

export interface Sample {
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  help: string;
  /** COUNTER, GAUGE, HISTOGRAM, UNTYPED… */
  type: string;
  samples: Sample[];
}

interface ParsedFamily {
  name: string;
  help: string;
  type: string;
  metrics: { labels?: Record<string, string>; value?: string }[];
}

const parse = parsePrometheusTextFormat as (text: string) => ParsedFamily[];

/**
 * Every family of `text` by name; a histogram `h` also gives `h_bucket`, `h_sum` and `h_count`
 * families of plain samples.
 */
export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const add = (family: ParsedFamily, type = family.type) => {
    const samples = family.metrics.map((metric) => ({
      labels: metric.labels ?? {},
      value: Number(metric.value),
    }));
    const known = families.get(family.name);
    if (known && type === "UNTYPED") known.samples.push(...samples);
    else families.set(family.name, { name: family.name, help: family.help, type, samples });
  };
  const parsed = parse(text.endsWith("\n") ? text : `${text}\n`); // its last line needs an end
  for (const family of parsed) add(family);
  for (const { name, type } of parsed) {
    if (type !== "HISTOGRAM") continue;
    const lines = text.split("\n").filter((line) =>
      line.startsWith(`${name}_bucket{`) || line.startsWith(`${name}_sum`) ||
      line.startsWith(`${name}_count`)
    );
    for (const family of parse(lines.join("\n") + "\n")) add(family, "UNTYPED");
  }
  return families;
}

/**
 * The value of `name`'s sample whose labels include `labels`; 0 when there is none (a counter
 * not yet counted). More than one matching is an error of the test.
 */
export function valueOf(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number {
  const matching = (families.get(name)?.samples ?? []).filter((sample) =>
    Object.entries(labels).every(([key, value]) => sample.labels[key] === value)
  );
  if (matching.length > 1) throw new Error(`${name} ${JSON.stringify(labels)}: several samples`);
  return matching[0]?.value ?? 0;
}
