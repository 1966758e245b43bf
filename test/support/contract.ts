// Assertions on replies that came through the contract-validating proxy (support/prism.ts).
// Kept apart from http.ts, which the ingest benchmark imports outside vitest.
import { expect } from "vitest";
import type { Reply } from "./http.ts";

/** Prism's explanation when a response broke the contract (it answers 500 with this header). */
export function contractViolation(reply: { headers: Headers }): string | undefined {
  return reply.headers.get("sl-violations") ?? undefined;
}

/** Fails with Prism's explanation when the reply broke the contract. */
export function expectContract(reply: { headers: Headers; text: string }, message = reply.text): void {
  expect(contractViolation(reply), message).toBeUndefined();
}

/** The reply kept the contract and has `status`: returns its body. */
export function ok<T = any>(reply: Reply<T>, status = 200): T {
  expectContract(reply);
  expect(reply.status, reply.text).toBe(status);
  return reply.body;
}
