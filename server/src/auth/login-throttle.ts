// Password guessing, slowed down (issue 15, finding 10): failed log-ins are counted per account
// and per client address; past a few free failures each further attempt must wait twice as long
// as the one before, up to 15 minutes, and is refused with 429 before the password is checked.
// A successful log-in clears its account's count (not its address's: one address may try many
// accounts). The counts live in the store, so the nodes of a deployment count together: in each
// node's memory, a guesser spreading attempts over N nodes behind one endpoint had N times the
// tries (D-322).
import { and, eq, inArray, lt, sql } from "drizzle-orm";
import type { Db } from "../store/open.ts";
import { loginFailures } from "../store/schema.ts";

/** Failures allowed before any wait, per account and per address. */
export const FREE_FAILURES = { account: 5, address: 20 } as const;
const FIRST_WAIT_MS = 1_000;
const MAX_WAIT_MS = 15 * 60_000;
/** A count not bumped for this long starts again from zero, and its row is removed. */
const FORGET_AFTER_MS = 24 * 3_600_000;
/** Forgotten rows are removed at most this often per process. */
const SWEEP_EVERY_MS = 3_600_000;

/** The wait after the `count`th failure of a key that allows `free`. */
const waitAfter = (count: number, free: number) =>
  count > free ? Math.min(MAX_WAIT_MS, FIRST_WAIT_MS * 2 ** (count - free - 1)) : 0;

export class LoginThrottle {
  private readonly db: Db;
  private readonly now: () => number;
  private sweptAt = Number.NEGATIVE_INFINITY;

  constructor(db: Db, now: () => number = Date.now) {
    this.db = db;
    this.now = now;
  }

  /** Milliseconds to wait before `account` may try again from `address`; 0 when it may now. */
  async waitMs(account: string, address: string | undefined): Promise<number> {
    const now = this.now();
    const rows = await this.db
      .select({ waitUntil: loginFailures.waitUntil })
      .from(loginFailures)
      .where(inArray(loginFailures.key, keys(account, address)));
    return Math.max(0, ...rows.map((r) => r.waitUntil - now));
  }

  async failed(account: string, address: string | undefined): Promise<void> {
    const now = this.now();
    for (const key of keys(account, address)) {
      // One statement per key: failures on several nodes at once each count.
      const count = sql<number>`case when ${loginFailures.lastAt} < ${now - FORGET_AFTER_MS} then 1 else ${loginFailures.count} + 1 end`;
      const [row] = await this.db
        .insert(loginFailures)
        .values({ key, count: 1, waitUntil: 0, lastAt: now })
        .onConflictDoUpdate({ target: loginFailures.key, set: { count, lastAt: now } })
        .returning({ count: loginFailures.count });
      const wait = waitAfter(row!.count, key.startsWith("a:") ? FREE_FAILURES.account : FREE_FAILURES.address);
      if (wait > 0) {
        await this.db
          .update(loginFailures)
          .set({ waitUntil: sql`greatest(${loginFailures.waitUntil}, ${now + wait})` })
          .where(eq(loginFailures.key, key));
      }
    }
    if (now - this.sweptAt >= SWEEP_EVERY_MS) {
      this.sweptAt = now;
      await this.db
        .delete(loginFailures)
        .where(and(lt(loginFailures.lastAt, now - FORGET_AFTER_MS), lt(loginFailures.waitUntil, now)));
    }
  }

  async succeeded(account: string): Promise<void> {
    await this.db.delete(loginFailures).where(eq(loginFailures.key, `a:${account}`));
  }
}

const keys = (account: string, address: string | undefined) =>
  address === undefined ? [`a:${account}`] : [`a:${account}`, `i:${address}`];
