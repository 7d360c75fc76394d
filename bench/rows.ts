/**
 * A figure of `deno task bench` next to its bare baseline measured in the same run, and the
 * target it is held to; printed as one line each, or as JSON with `--json`.
 */

export interface Row {
  /** What was measured. */
  name: string;
  value: number;
  /** `ms`, `MB`, `/s` or `%`. */
  unit: string;
  /** The bare baseline's figure (or the floor) in the same run, what it is, its unit if not the row's. */
  baseline: { name: string; value: number; unit?: string };
  /** The target (e.g. `< 100 ms`) and whether this run meets it. */
  target?: { text: string; met: boolean };
  /** How the figure was taken, or its spread over repeated measures. */
  detail?: string;
}

/** `12,345/s`, `41.2 %`, `1.24 s`, `87 ms`: as many decimals as the size needs. */
const format = (value: number, unit: string) => {
  if (unit === "/s") return `${Math.round(value).toLocaleString("en-US")}/s`;
  const digits = unit === "%" ? 1 : value < 10 ? 2 : value < 100 ? 1 : 0;
  const shown = value.toLocaleString("en-US", { maximumFractionDigits: digits });
  return unit ? `${shown} ${unit}` : shown;
};

/** One line per row: the figure, the baseline's, the target and its verdict, the details. */
export function printRows(rows: readonly Row[]): void {
  for (const { name, value, unit, baseline, target, detail } of rows) {
    const verdict = target ? `; target ${target.text}: ${target.met ? "met" : "MISSED"}` : "";
    const more = detail ? ` (${detail})` : "";
    console.log(
      `${name}: ${format(value, unit)}; ${baseline.name}: ${
        format(baseline.value, baseline.unit ?? unit)
      }` +
        `${verdict}${more}`,
    );
  }
}

/** The median of `values` (the lower middle one of an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/** `min–max` of `values`, rounded to `digits`. */
export function spread(values: readonly number[], digits = 0): string {
  return `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;
}
