// How long a client waits for a record write on one process over PostgreSQL (D-356). A store that
// hangs (a frozen host, a partition that drops packets) answers neither yes nor no, and the write
// holding the index's lock waited on it for good, with every write queued behind it. The client
// is answered 503 once the bound runs out; a write whose turn had not come by then is never made
// (it would surprise a client told so), and one that had reached the store is finished by the
// store's answer, whichever it is.
import { UnavailableError } from "../../domain/errors.ts";
import { within } from "../../within.ts";

export class WriteDeadline {
  private reachedStore = false;
  private readonly at: number;
  private readonly ms: number;

  constructor(ms: number) {
    this.at = Date.now() + ms;
    this.ms = ms;
  }

  expired(): boolean {
    return Date.now() >= this.at;
  }

  /** Throws once the client has been (or is being) answered: the write must not be made. */
  check(): void {
    if (this.expired()) throw this.answer();
  }

  /** From here the write goes on to its end whatever the client was answered. */
  commit(): void {
    this.check();
    this.reachedStore = true;
  }

  /** What the client is told when the bound runs out. */
  answer(): UnavailableError {
    const seconds = this.ms / 1000;
    return new UnavailableError(
      this.reachedStore
        ? `the metadata store did not answer within ${seconds} s; this write is applied if the store records it when it answers, so sending it again is safe`
        : `the metadata store did not answer within ${seconds} s; this write was not applied, send it again`,
      { retryAfterSeconds: 5 },
    );
  }
}

/** Runs `write` with a deadline, answering when it ends or when the deadline does (its `answer`). */
export function boundedWrite<T>(ms: number, write: (deadline: WriteDeadline) => Promise<T>): Promise<T> {
  const deadline = new WriteDeadline(ms);
  return within(ms, "a write", write(deadline), { error: () => deadline.answer() });
}
