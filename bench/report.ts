/**
 * One figure of `deno task bench` beside its bare baseline and its goal, printed as a line and
 * kept for `--json`.
 */
export interface BenchRow {
  name: string;
  value: number;
  unit: string;
  /** Other figures of the same measurement, in words. */
  detail?: string;
  /** What the figure is compared with, measured in the same run (or its floor). */
  baseline?: { name: string; value: number; unit: string };
  target?: { text: string; met: boolean };
}

const shown = (value: number, unit: string) =>
  `${value.toLocaleString("en-US", { maximumFractionDigits: value < 10 ? 2 : 1 })}${
    unit && unit !== "/s" ? " " : ""
  }${unit}`;

/** One line per row: figure, detail, baseline, and whether the goal is met. */
export function printRows(rows: BenchRow[]): void {
  for (const { name, value, unit, detail, baseline, target } of rows) {
    const parts = [`${name}: ${shown(value, unit)}`];
    if (detail) parts.push(`(${detail})`);
    if (baseline) parts.push(`— ${baseline.name}: ${shown(baseline.value, baseline.unit)}`);
    if (target) parts.push(`(goal ${target.text}: ${target.met ? "met" : "MISSED"})`);
    console.log(parts.join(" "));
  }
}
