// Request rate limits (docs/api.md, Rate limits): one bucket per caller, sized by the caller's
// kind. A bucket lets `rate` requests through each second and, past that, draws on a burst
// allowance of `burst` requests that refills every BURST_WINDOW_SECONDS, so a client that was
// quiet can make a short spike (a page load's searches) but not hold more than its rate. The
// counters live in memory, or in Redis when several processes must share them.
import { RateLimiterMemory, type RateLimiterAbstract, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import type { Redis } from "ioredis";
import type { Caller } from "../auth/authority.ts";

export const BURST_WINDOW_SECONDS = 10;

export interface RatePolicy {
  /** Requests a second. */
  rate: number;
  /** Extra requests allowed over BURST_WINDOW_SECONDS once the rate is used up. */
  burst: number;
}

/** Per caller kind; null means no limit. */
export type RatePolicies = Record<Caller, RatePolicy | null>;

export interface RateDecision {
  allowed: boolean;
  /** The policy that decided: the per-second rate, or the burst allowance once the rate is spent. */
  window: "rate" | "burst";
  limit: number;
  windowSeconds: number;
  remaining: number;
  /** Seconds until `remaining` grows again. */
  resetSeconds: number;
}

/** Where the counters live: this process, or a Redis shared by every process. */
export type RateStore = { kind: "memory" } | { kind: "redis"; client: Redis; prefix: string };

export class RateLimits {
  readonly policies: RatePolicies;
  private readonly limiters = new Map<Caller, { rate: RateLimiterAbstract; burst: RateLimiterAbstract }>();

  constructor(policies: RatePolicies, store: RateStore) {
    this.policies = policies;
    for (const [caller, policy] of Object.entries(policies) as [Caller, RatePolicy | null][]) {
      if (!policy) continue;
      const make = (name: string, points: number, duration: number): RateLimiterAbstract => {
        const options = { keyPrefix: `${caller}-${name}`, points, duration };
        if (store.kind === "memory") return new RateLimiterMemory(options);
        // If Redis goes away, each process keeps limiting on its own rather than letting all through.
        return new RateLimiterRedis({
          ...options,
          keyPrefix: `${store.prefix}:rl:${options.keyPrefix}`,
          storeClient: store.client,
          rejectIfRedisNotReady: true,
          insuranceLimiter: new RateLimiterMemory(options),
        });
      };
      this.limiters.set(caller, {
        rate: make("rate", policy.rate, 1),
        burst: make("burst", Math.max(policy.burst, 1), BURST_WINDOW_SECONDS),
      });
    }
  }

  /** Takes one request from `key`'s bucket; undefined when callers of this kind are not limited. */
  async consume(caller: Caller, key: string): Promise<RateDecision | undefined> {
    const limiter = this.limiters.get(caller);
    const policy = this.policies[caller];
    if (!limiter || !policy) return undefined;
    const rate = await settle(limiter.rate.consume(key));
    if (rate.allowed) return decision(true, "rate", policy.rate, 1, rate.res);
    if (policy.burst === 0) return decision(false, "rate", policy.rate, 1, rate.res);
    const burst = await settle(limiter.burst.consume(key));
    if (burst.allowed) return decision(true, "burst", policy.burst, BURST_WINDOW_SECONDS, burst.res);
    // Both spent: the next request goes through when the current second ends.
    return { ...decision(false, "burst", policy.burst, BURST_WINDOW_SECONDS, burst.res), resetSeconds: 1 };
  }
}

async function settle(p: Promise<RateLimiterRes>): Promise<{ allowed: boolean; res: RateLimiterRes }> {
  try {
    return { allowed: true, res: await p };
  } catch (rejection) {
    // The library rejects with its result when the bucket is empty, and with an Error when the
    // store fails (the insurance limiter then answers; an Error here is a bug worth a 500).
    if (rejection instanceof RateLimiterRes) return { allowed: false, res: rejection };
    throw rejection;
  }
}

const decision = (
  allowed: boolean,
  window: RateDecision["window"],
  limit: number,
  windowSeconds: number,
  res: RateLimiterRes,
): RateDecision => ({
  allowed,
  window,
  limit,
  windowSeconds,
  remaining: Math.max(0, res.remainingPoints),
  resetSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
});

/**
 * Parses a policy as configured: `off`, `<rate>` (burst five times the rate) or `<rate>/<burst>`.
 * Returns an error message for anything else.
 */
export function parseRatePolicy(raw: string): RatePolicy | null | string {
  const value = raw.trim().toLowerCase();
  if (value === "off") return null;
  const m = /^(\d+)(?:\/(\d+))?$/.exec(value);
  if (!m) return `must be "off", a number of requests a second like 50, or rate/burst like 50/250`;
  const rate = Number(m[1]);
  const burst = m[2] === undefined ? rate * 5 : Number(m[2]);
  if (rate < 1 || rate > 1_000_000 || burst > 10_000_000) return "must have a rate from 1 to 1000000";
  return { rate, burst };
}
