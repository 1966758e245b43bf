// Password guessing, slowed down (issue 15, finding 10): failed log-ins are counted per account
// and per client address; past a few free failures each further attempt must wait twice as long
// as the one before, up to 15 minutes, and is refused with 429 before the password is checked.
// A successful log-in clears its account's count (not its address's: one address may try many
// accounts). In memory: one process's view, like the other caches (README, Known gaps).

/** Failures allowed before any wait, per account and per address. */
export const FREE_FAILURES = { account: 5, address: 20 } as const;
const FIRST_WAIT_MS = 1_000;
const MAX_WAIT_MS = 15 * 60_000;
/** A count not bumped for this long is forgotten (and the map stays small). */
const FORGET_AFTER_MS = 24 * 3_600_000;

interface Failures {
  count: number;
  /** No attempt is let through before this time. */
  until: number;
  last: number;
}

export class LoginThrottle {
  private readonly failures = new Map<string, Failures>();
  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /** Milliseconds to wait before `account` may try again from `address`; 0 when it may now. */
  waitMs(account: string, address: string | undefined): number {
    const now = this.now();
    let wait = 0;
    for (const key of keys(account, address)) {
      const f = this.failures.get(key);
      if (f && f.until > now) wait = Math.max(wait, f.until - now);
    }
    return wait;
  }

  failed(account: string, address: string | undefined): void {
    const now = this.now();
    if (this.failures.size > 100_000) this.forget(now);
    for (const key of keys(account, address)) {
      const f = this.failures.get(key) ?? { count: 0, until: 0, last: now };
      f.count++;
      f.last = now;
      const free = key.startsWith("a:") ? FREE_FAILURES.account : FREE_FAILURES.address;
      if (f.count > free) f.until = now + Math.min(MAX_WAIT_MS, FIRST_WAIT_MS * 2 ** (f.count - free - 1));
      this.failures.set(key, f);
    }
  }

  succeeded(account: string): void {
    this.failures.delete(`a:${account}`);
  }

  private forget(now: number): void {
    for (const [key, f] of this.failures) if (now - f.last > FORGET_AFTER_MS) this.failures.delete(key);
  }
}

const keys = (account: string, address: string | undefined) =>
  address === undefined ? [`a:${account}`] : [`a:${account}`, `i:${address}`];
