// Rate limits off for every kind of caller: functional tests and benchmarks must not depend on how
// fast a machine sends requests. The tests of the limits (e2e/limits.test.ts) set their own.
export const RATE_LIMITS_OFF: Record<string, string> = Object.fromEntries(
  ["ANONYMOUS", "SRH", "SVC", "PAT", "ADM", "SESSION", "OAUTH"].map((k) => [`SIFT_RATE_LIMIT_${k}`, "off"]),
);
