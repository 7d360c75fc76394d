/**
 * Number sanitizing for dial commands (decisions §5), in this order: `(0)` is removed, a leading (after spaces)
 * `+` becomes `00`, and every character other than digits, `*` and `#` is removed.
 */

/**
 * The number a dial command dials; empty when nothing dialable is left (the caller answers 400).
 *
 * @example
 * sanitizeNumber("+33 (0)6 12 34 56 78"); // "0033612345678"
 */
export function sanitizeNumber(raw: string): string {
  const withoutTrunkZero = raw.replaceAll("(0)", "");
  const international = withoutTrunkZero.trimStart().startsWith("+")
    ? `00${withoutTrunkZero.trimStart().slice(1)}`
    : withoutTrunkZero;
  return international.replace(/[^0-9*#]/g, "");
}
