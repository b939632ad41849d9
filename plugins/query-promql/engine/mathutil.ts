/** Numeric helpers that must match Prometheus bit for bit (Kahan sums, quantiles, Go formatting). */

/** Kahan-Neumaier increment: returns [sum, compensation]. Writes into `out` to avoid allocation. */
export function kahanInc(inc: number, sum: number, c: number, out: Float64Array): void {
  const t = sum + inc;
  if (!Number.isFinite(t) && t === t) c = 0;
  else if (Math.abs(sum) >= Math.abs(inc)) c += sum - t + inc;
  else c += inc - t + sum;
  out[0] = t;
  out[1] = c;
}

/** Prometheus' quantile over a list (sorted in place; NaN first as Go's vectorByValueHeap). */
export function quantile(q: number, values: number[]): number {
  if (values.length === 0 || q !== q) return NaN;
  if (q < 0) return -Infinity;
  if (q > 1) return Infinity;
  values.sort(nanFirst);
  const n = values.length;
  const rank = q * (n - 1);
  const lower = Math.max(0, Math.floor(rank));
  const upper = Math.min(n - 1, lower + 1);
  const weight = rank - Math.floor(rank);
  return values[lower]! * (1 - weight) + values[upper]! * weight;
}

export function nanFirst(a: number, b: number): number {
  if (a !== a) return b !== b ? 0 : -1;
  if (b !== b) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

const MIN_NORMAL = 2.2250738585072014e-308;

/** Go's almost.Equal. */
export function almostEqual(a: number, b: number, eps: number): boolean {
  if (a === b) return true;
  const absSum = Math.abs(a) + Math.abs(b);
  const diff = Math.abs(a - b);
  if (a === 0 || b === 0 || absSum < MIN_NORMAL) return diff < eps * MIN_NORMAL;
  return diff / Math.min(absSum, Number.MAX_VALUE) < eps;
}

/** Go's strconv.FormatFloat(f, 'f', -1, 64) as used in Prometheus' JSON. */
export function formatFloat(f: number): string {
  if (f !== f) return 'NaN';
  if (f === Infinity) return '+Inf';
  if (f === -Infinity) return '-Inf';
  if (Object.is(f, -0)) return '-0';
  const s = String(f);
  if (!s.includes('e')) return s;
  // Expand exponent notation into plain digits (shortest repr digits, like Go's 'f', -1).
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(s)!;
  const sign = m[1]!;
  const digits = m[2]! + (m[3] ?? '');
  const exp = Number(m[4]);
  if (exp >= 0) {
    const intLen = exp + 1;
    if (digits.length <= intLen) return sign + digits + '0'.repeat(intLen - digits.length);
    return sign + digits.slice(0, intLen) + '.' + digits.slice(intLen);
  }
  return sign + '0.' + '0'.repeat(-exp - 1) + digits;
}

/** Go's %g-ish formatting used by count_values labels and messages (strconv 'f', -1 for labels). */
export function formatGoG(f: number): string {
  if (f !== f) return 'NaN';
  if (f === Infinity) return '+Inf';
  if (f === -Infinity) return '-Inf';
  const abs = Math.abs(f);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e21)) {
    let s = f.toExponential();
    s = s.replace(/e([+-])(\d)$/, 'e$10$2');
    return s;
  }
  return String(f);
}
