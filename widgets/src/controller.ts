// The behaviour of the autocomplete without any DOM: debounced searching, aborting and ignoring
// stale answers, the query cache and the keyboard state machine. The element renders its state.
import { Lru } from "./lru.ts";

export type Status = "idle" | "loading" | "results" | "empty" | "error";

export interface State<R> {
  /** The text in the input. */
  query: string;
  /** The suggestions on show, and the query they answer (older than `query` while loading). */
  results: readonly R[];
  resultsQuery: string;
  status: Status;
  open: boolean;
  /** Index of the active option, -1 for none. */
  active: number;
}

/** What the element should do with the key event after the controller has handled it. */
export type KeyOutcome = "handled" | "submit" | "default";

export interface ControllerOptions<R extends { title: string }> {
  search(query: string, signal: AbortSignal): Promise<R[]>;
  debounceMs(): number;
  onChange(state: Readonly<State<R>>): void;
  /** The debounce fired (or the cache answered): `query` is being searched. */
  onQuery?(query: string): void;
  onSelect?(record: R, query: string): void;
  onError?(error: unknown, query: string): void;
}

const CACHE_SIZE = 30;

export class AutocompleteController<R extends { title: string }> {
  readonly state: State<R> = { query: "", results: [], resultsQuery: "", status: "idle", open: false, active: -1 };
  private readonly options: ControllerOptions<R>;
  private readonly cache: Lru<string, R[]>;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private inflight: AbortController | undefined;
  /** Bumped by every change of the input: an answer carrying an older number is stale. */
  private sequence = 0;

  constructor(options: ControllerOptions<R>) {
    this.options = options;
    this.cache = new Lru(CACHE_SIZE);
  }

  /** The user edited the input. */
  input(text: string): void {
    this.cancel();
    const query = text.trim();
    this.state.query = text;
    this.state.active = -1;
    if (query === "") {
      this.set({ results: [], resultsQuery: "", status: "idle", open: false });
      return;
    }
    const cached = this.cache.get(query);
    if (cached) {
      this.options.onQuery?.(query);
      this.show(query, cached);
      return;
    }
    this.set({ status: "loading" });
    const sequence = this.sequence;
    this.timer = setTimeout(() => this.fire(query, sequence), this.options.debounceMs());
  }

  private fire(query: string, sequence: number): void {
    this.timer = undefined;
    this.options.onQuery?.(query);
    const inflight = new AbortController();
    this.inflight = inflight;
    // A search that throws at once (a malformed base URL, say) fails like one that rejects.
    new Promise<R[]>((resolve) => resolve(this.options.search(query, inflight.signal))).then(
      (results) => {
        this.cache.set(query, results);
        if (sequence === this.sequence) this.show(query, results);
      },
      (error: unknown) => {
        if (sequence !== this.sequence || inflight.signal.aborted) return;
        this.inflight = undefined;
        this.set({ results: [], resultsQuery: query, status: "error", open: true });
        this.options.onError?.(error, query);
      },
    );
  }

  private show(query: string, results: R[]): void {
    this.inflight = undefined;
    this.set({
      results,
      resultsQuery: query,
      status: results.length > 0 ? "results" : "empty",
      open: true,
      active: -1,
    });
  }

  /** Stops the pending debounce and aborts the request in flight; their answers will be ignored. */
  private cancel(): void {
    this.sequence++;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.inflight?.abort();
    this.inflight = undefined;
  }

  key(key: string, altKey = false): KeyOutcome {
    const { open, active } = this.state;
    const count = this.showing() ? this.state.results.length : 0;
    switch (key) {
      case "ArrowDown":
      case "ArrowUp": {
        if (count === 0) {
          // Results were dropped (focus left mid-search) or failed: ask again.
          if (this.state.query.trim() === "" || this.state.status === "loading") return "default";
          this.input(this.state.query);
          return "handled";
        }
        const down = key === "ArrowDown";
        if (!open) this.set({ open: true, active: altKey ? -1 : down ? 0 : count - 1 });
        else if (down) this.set({ active: active + 1 >= count ? 0 : active + 1 });
        else this.set({ active: active <= 0 ? count - 1 : active - 1 });
        return "handled";
      }
      case "Home":
      case "End":
        // Without an active option these keys move the caret, as in any text field.
        if (!open || active < 0) return "default";
        this.set({ active: key === "Home" ? 0 : count - 1 });
        return "handled";
      case "Enter":
        if (open && active >= 0) {
          this.choose(active);
          return "handled";
        }
        this.close();
        return "submit";
      case "Escape":
        if (open) {
          this.close();
          return "handled";
        }
        if (this.state.query === "") return "default";
        this.input("");
        return "handled";
      case "Tab":
        this.close();
        return "default";
      default:
        return "default";
    }
  }

  /** The pointer is over option `index`. */
  hover(index: number): void {
    if (this.state.open && index !== this.state.active) this.set({ active: index });
  }

  /** Selects option `index`: the input takes its title and the listbox closes. */
  choose(index: number): void {
    const record = this.state.results[index];
    if (record === undefined) return;
    const typed = this.state.query;
    this.text(record.title);
    this.options.onSelect?.(record, typed);
  }

  /** Puts `value` in the input without searching for it (a selection, a form reset or restore). */
  text(value: string): void {
    this.settle();
    this.set({ query: value, open: false, active: -1 });
  }

  /** Focus left the widget, or Tab: close without forgetting the results. */
  close(): void {
    this.settle();
    this.set({ open: false, active: -1 });
  }

  /** Drops the search under way, if any; the results on show stay. */
  private settle(): void {
    if (this.state.status !== "loading") return;
    this.cancel();
    this.state.status = this.state.results.length > 0 ? "results" : "idle";
  }

  /** Settings changed (index, key, geo position...): cached answers no longer apply. */
  reset(): void {
    this.cache.clear();
  }

  /** Whether the results on show answer what is in the input. */
  private showing(): boolean {
    return this.state.resultsQuery !== "" && this.state.resultsQuery === this.state.query.trim();
  }

  private set(patch: Partial<State<R>>): void {
    Object.assign(this.state, patch);
    this.options.onChange(this.state);
  }
}
