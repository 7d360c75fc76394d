/**
 * A figure of `deno task bench` next to its bare baseline measured in the same run, the ratio of
 * the two, and the target it is held to (issue 28: every target is a ratio to a bare Deno program
 * doing the least the same work needs, or an absolute bound where the issue gives one); printed as
 * one line each, or as JSON with `--json` ({@link withRatio}).
 */

export interface Row {
  /** What was measured. */
  name: string;
  value: number;
  /** `ms`, `MB`, `/s` or `%`. */
  unit: string;
  /** The bare baseline's figure (or the floor) in the same run, what it is, its unit if not the row's. */
  baseline: { name: string; value: number; unit?: string };
  /**
   * How the ratio is shown, as the target reads it: `×` value / baseline (the default), `%` the
   * same in percent, `+` the difference value − baseline in the row's unit (with the quotient).
   */
  ratioAs?: "×" | "%" | "+";
  /** The target (e.g. `≤ 2.5 × the bare hello`) and whether this run meets it. */
  target?: { text: string; met: boolean };
  /** How the figure was taken, or its spread over repeated measures. */
  detail?: string;
}

/** A row as `--json` prints it: with its ratio to the baseline, as a number and as shown. */
export type RowWithRatio = Row & { ratio: number | null; ratioText: string };

/** `12,345/s`, `41.2 %`, `1.24 s`, `87 ms`: as many decimals as the size needs. */
const format = (value: number, unit: string) => {
  if (unit === "/s") return `${Math.round(value).toLocaleString("en-US")}/s`;
  const size = Math.abs(value);
  const digits = unit === "%" ? 1 : size < 10 ? 2 : size < 100 ? 1 : 0;
  const shown = value.toLocaleString("en-US", { maximumFractionDigits: digits });
  return unit ? `${shown} ${unit}` : shown;
};

/**
 * The row with its ratio: value / baseline (null when the baseline is 0), and the ratio as shown:
 * `1.62 ×`, `68.2 %`, or `+26.1 MB (1.62 ×)`.
 */
export function withRatio(row: Row): RowWithRatio {
  const { value, baseline, ratioAs = "×" } = row;
  const ratio = baseline.value === 0 ? null : value / baseline.value;
  const quotient = ratio === null ? "—" : `${ratio.toFixed(2)} ×`;
  let ratioText = quotient;
  if (ratioAs === "%") ratioText = ratio === null ? "—" : `${(ratio * 100).toFixed(1)} %`;
  if (ratioAs === "+") {
    const difference = value - baseline.value;
    ratioText = `${difference >= 0 ? "+" : "−"}${format(Math.abs(difference), row.unit)} ` +
      `(${quotient})`;
  }
  return { ...row, ratio, ratioText };
}

/** One line per row: the figure, the baseline's, the ratio, the target and its verdict, details. */
export function printRows(rows: readonly Row[]): void {
  for (const row of rows.map(withRatio)) {
    const { name, value, unit, baseline, target, detail, ratioText } = row;
    const verdict = target ? `; target ${target.text}: ${target.met ? "met" : "MISSED"}` : "";
    const more = detail ? ` (${detail})` : "";
    console.log(
      `${name}: ${format(value, unit)}; ${baseline.name}: ${
        format(baseline.value, baseline.unit ?? unit)
      }; ratio ${ratioText}${verdict}${more}`,
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
