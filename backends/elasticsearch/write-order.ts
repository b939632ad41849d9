/**
 * A write-order number: microseconds since the epoch, strictly increasing within a process.
 * Chunks of the same series written later carry a larger number, so on reading, a duplicate
 * timestamp resolves to the last write. Across Lookout processes it orders by wall clock.
 */
export class WriteOrder {
  private last = 0;

  next(): number {
    const now = Date.now() * 1000;
    this.last = now > this.last ? now : this.last + 1;
    return this.last;
  }
}
