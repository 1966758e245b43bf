// Keeps the k best of a stream of items without sorting them all: a bounded max-heap whose root
// is the worst item kept.

export class TopK<T> {
  private readonly k: number;
  private readonly compare: (a: T, b: T) => number;
  private readonly heap: T[] = [];

  constructor(k: number, compare: (a: T, b: T) => number) {
    this.k = k;
    this.compare = compare;
  }

  offer(item: T): void {
    const heap = this.heap;
    if (heap.length < this.k) {
      heap.push(item);
      this.siftUp(heap.length - 1);
    } else if (this.k > 0 && this.compare(item, heap[0]!) < 0) {
      heap[0] = item;
      this.siftDown(0);
    }
  }

  /** The kept items, best first. */
  sorted(): T[] {
    return [...this.heap].sort(this.compare);
  }

  private siftUp(i: number): void {
    const heap = this.heap;
    const item = heap[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.compare(heap[parent]!, item) >= 0) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = item;
  }

  private siftDown(i: number): void {
    const heap = this.heap;
    const n = heap.length;
    const item = heap[i]!;
    while (true) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && this.compare(heap[child + 1]!, heap[child]!) > 0) child++;
      if (this.compare(heap[child]!, item) <= 0) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = item;
  }
}
