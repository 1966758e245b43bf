// How long a client waits for a sign-in or a control-plane call on PostgreSQL that hangs (D-360).
// A frozen host or a partition that drops packets leaves the driver's connections open and silent:
// a query on one neither answers nor fails, and the request waited until the store did. The client
// is answered 503 once the bound runs out; the call itself goes on, and a change it was making is
// applied if the store records it when it answers, as a change whose answer was lost would be.
import { UnavailableError } from "../domain/errors.ts";
import { within } from "../within.ts";

/**
 * How long a client waits for PostgreSQL, set by the composition root: for these calls, and for
 * a record write or a purge in one process (versions/write-deadline.ts, D-356). PGlite runs in
 * process and is not bounded (D-350).
 */
export const STORE_WAIT_MS = 10_000;

/** What the client is told when the bound of a call runs out: the call itself goes on. */
export class StoreCallTimedOut extends UnavailableError {
  override name = "StoreCallTimedOut";
  constructor(ms: number, changes: boolean) {
    const seconds = ms / 1000;
    super(
      changes
        ? `the metadata store did not answer within ${seconds} s; this change is applied if the store records it when it answers: look before sending it again`
        : `the metadata store did not answer within ${seconds} s; try again shortly`,
      { retryAfterSeconds: 5 },
    );
  }
}

/** `work`, or StoreCallTimedOut once it has taken `ms`; `work` itself without `ms`. */
export function storeStep<T>(ms: number | undefined, changes: boolean, work: PromiseLike<T>): Promise<T> {
  const started = Promise.resolve(work);
  if (ms === undefined) return started;
  return within(ms, "a store step", started, { error: () => new StoreCallTimedOut(ms, changes) });
}

type Method<T> = { [K in keyof T]: T[K] extends (...args: never[]) => Promise<unknown> ? K : never }[keyof T];

/**
 * `service` with each of `reads` and `changes` answering within `ms`, else with
 * StoreCallTimedOut; `service` itself without `ms`. Its other methods, and its calls to itself,
 * are not bounded.
 */
export function withStoreDeadline<T extends object>(
  service: T,
  ms: number | undefined,
  calls: { reads: Method<T>[]; changes: Method<T>[] },
): T {
  if (ms === undefined) return service;
  const bounded = new Map<PropertyKey, boolean>([
    ...calls.reads.map((name) => [name, false] as const),
    ...calls.changes.map((name) => [name, true] as const),
  ]);
  return new Proxy(service, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      const changes = bounded.get(property);
      if (changes === undefined || typeof value !== "function") return value;
      return (...args: unknown[]) => storeStep(ms, changes, value.apply(target, args) as Promise<unknown>);
    },
  });
}
