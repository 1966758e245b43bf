// Writes of one tenant, bounded (issue 15, finding 7): 32 clients writing at once kept 32 writes'
// work queued on the one event loop, and every other tenant's search waited behind all of it
// (310 searches/s, p99 235 ms, from 12,870/s). A tenant may have this many record writes in
// progress at a time; the rest wait their turn in order, which costs nothing while they wait.
// Throughput hardly changes: writes to one index are serialised anyway, and the work is the same.

export class WriteGate {
  private readonly perTenant: number;
  private readonly running = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();

  constructor(perTenant: number) {
    this.perTenant = perTenant;
  }

  async run<T>(tenantId: string, fn: () => Promise<T>): Promise<T> {
    if ((this.running.get(tenantId) ?? 0) >= this.perTenant) {
      await new Promise<void>((resolve) => {
        const queue = this.waiting.get(tenantId) ?? [];
        queue.push(resolve);
        this.waiting.set(tenantId, queue);
      });
    } else {
      this.running.set(tenantId, (this.running.get(tenantId) ?? 0) + 1);
    }
    try {
      return await fn();
    } finally {
      this.release(tenantId);
    }
  }

  /** Hands the slot to the next waiting write of the tenant, or frees it. */
  private release(tenantId: string): void {
    const queue = this.waiting.get(tenantId);
    const next = queue?.shift();
    if (queue && queue.length === 0) this.waiting.delete(tenantId);
    if (next) {
      next();
      return;
    }
    const left = (this.running.get(tenantId) ?? 1) - 1;
    if (left === 0) this.running.delete(tenantId);
    else this.running.set(tenantId, left);
  }
}
