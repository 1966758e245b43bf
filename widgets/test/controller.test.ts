import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { AutocompleteController } from "../src/controller.ts";

interface Rec {
  id: string;
  title: string;
}

interface Call {
  query: string;
  signal: AbortSignal;
  resolve(results: Rec[]): void;
  reject(error: unknown): void;
}

const recs = (...titles: string[]): Rec[] => titles.map((title, i) => ({ id: String(i), title }));

/** A controller over a search whose answers the test releases by hand. */
function setup(debounce = 150) {
  const calls: Call[] = [];
  const queries: string[] = [];
  const selected: { record: Rec; query: string }[] = [];
  const errors: unknown[] = [];
  const c = new AutocompleteController<Rec>({
    search: (query, signal) =>
      new Promise<Rec[]>((resolve, reject) => {
        calls.push({ query, signal, resolve, reject });
      }),
    debounceMs: () => debounce,
    onChange: () => {},
    onQuery: (q) => queries.push(q),
    onSelect: (record, query) => selected.push({ record, query }),
    onError: (e) => errors.push(e),
  });
  const titles = () => (c.state.open ? c.state.results.map((r) => r.title) : []);
  return { c, calls, queries, selected, errors, titles };
}

/** Lets resolved promises run their handlers. */
const settle = () => vi.advanceTimersByTimeAsync(0);

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

describe("debounce", () => {
  test("a burst of keystrokes sends one search, for the last text, once typing pauses", async () => {
    const { c, calls, queries } = setup(150);
    c.input("p");
    await vi.advanceTimersByTimeAsync(100);
    c.input("pa");
    await vi.advanceTimersByTimeAsync(100);
    c.input("par");
    await vi.advanceTimersByTimeAsync(149);
    expect(calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls.map((x) => x.query)).toEqual(["par"]);
    expect(queries).toEqual(["par"]);
  });

  test("blank input searches nothing and closes the list", async () => {
    const { c, calls, titles } = setup();
    c.input("par");
    await vi.advanceTimersByTimeAsync(150);
    calls[0]!.resolve(recs("Paris"));
    await settle();
    expect(titles()).toEqual(["Paris"]);
    c.input("   ");
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toHaveLength(1);
    expect(c.state).toMatchObject({ open: false, status: "idle" });
  });
});

describe("stale answers", () => {
  test("typing on aborts the request in flight, and a late answer to it is never shown", async () => {
    const { c, calls, titles } = setup(100);
    c.input("pa");
    await vi.advanceTimersByTimeAsync(100);
    c.input("pari");
    expect(calls[0]!.signal.aborted).toBe(true);
    await vi.advanceTimersByTimeAsync(100);
    calls[1]!.resolve(recs("Paris"));
    await settle();
    // The first search ignored its abort signal and answers last: it must not replace "Paris".
    calls[0]!.resolve(recs("Pamplona", "Panama"));
    await settle();
    expect(titles()).toEqual(["Paris"]);
    expect(c.state.resultsQuery).toBe("pari");
  });

  test("an aborted request's rejection is not an error", async () => {
    const { c, calls, errors } = setup(100);
    c.input("pa");
    await vi.advanceTimersByTimeAsync(100);
    c.input("par");
    calls[0]!.reject(new DOMException("aborted", "AbortError"));
    await settle();
    expect(errors).toEqual([]);
    expect(c.state.status).toBe("loading");
  });

  test("closing (focus left) while a search runs aborts it, and its answer does not reopen the list", async () => {
    const { c, calls } = setup(100);
    c.input("par");
    await vi.advanceTimersByTimeAsync(100);
    c.close();
    expect(calls[0]!.signal.aborted).toBe(true);
    calls[0]!.resolve(recs("Paris"));
    await settle();
    expect(c.state).toMatchObject({ open: false, status: "idle" });
  });
});

describe("cache", () => {
  test("going back to an earlier query answers at once without a request", async () => {
    const { c, calls, queries, titles } = setup(100);
    c.input("par");
    await vi.advanceTimersByTimeAsync(100);
    calls[0]!.resolve(recs("Paris", "Parma"));
    await settle();
    c.input("parm");
    await vi.advanceTimersByTimeAsync(100);
    calls[1]!.resolve(recs("Parma"));
    await settle();
    c.input("par ");
    expect(titles()).toEqual(["Paris", "Parma"]);
    expect(c.state.status).toBe("results");
    expect(calls).toHaveLength(2);
    expect(queries).toEqual(["par", "parm", "par"]);
  });

  test("reset forgets cached answers (another index, key or position)", async () => {
    const { c, calls } = setup(100);
    c.input("par");
    await vi.advanceTimersByTimeAsync(100);
    calls[0]!.resolve(recs("Paris"));
    await settle();
    c.reset();
    c.input("pa");
    c.input("par");
    await vi.advanceTimersByTimeAsync(100);
    expect(calls).toHaveLength(2);
  });
});

describe("states", () => {
  test("no match shows the empty state; a failure shows the error state and reports it", async () => {
    const { c, calls, errors } = setup(0);
    c.input("zzz");
    await vi.advanceTimersByTimeAsync(0);
    calls[0]!.resolve([]);
    await settle();
    expect(c.state).toMatchObject({ open: true, status: "empty", resultsQuery: "zzz" });
    c.input("par");
    await vi.advanceTimersByTimeAsync(0);
    const failure = new Error("down");
    calls[1]!.reject(failure);
    await settle();
    expect(c.state).toMatchObject({ open: true, status: "error", results: [] });
    expect(errors).toEqual([failure]);
  });

  test("a search that throws instead of rejecting still ends in the error state", async () => {
    const errors: unknown[] = [];
    const c = new AutocompleteController<Rec>({
      search: () => {
        throw new TypeError("Invalid URL");
      },
      debounceMs: () => 0,
      onChange: () => {},
      onError: (e) => errors.push(e),
    });
    c.input("par");
    await vi.advanceTimersByTimeAsync(0);
    expect(c.state.status).toBe("error");
    expect(errors).toHaveLength(1);
  });

  test("earlier results stay on show while the next search runs", async () => {
    const { c, calls, titles } = setup(100);
    c.input("par");
    await vi.advanceTimersByTimeAsync(100);
    calls[0]!.resolve(recs("Paris"));
    await settle();
    c.input("pari");
    expect(c.state.status).toBe("loading");
    expect(titles()).toEqual(["Paris"]);
  });
});

describe("keyboard", () => {
  async function open(titles = ["Paris", "Parma", "Parla"]) {
    const t = setup(0);
    t.c.input("par");
    await vi.advanceTimersByTimeAsync(0);
    t.calls[0]!.resolve(recs(...titles));
    await settle();
    return t;
  }

  test("Down and Up move through the options and wrap around", async () => {
    const { c } = await open();
    expect(c.state.active).toBe(-1);
    expect(c.key("ArrowDown")).toBe("handled");
    expect(c.state.active).toBe(0);
    c.key("ArrowDown");
    c.key("ArrowDown");
    expect(c.state.active).toBe(2);
    c.key("ArrowDown");
    expect(c.state.active).toBe(0);
    c.key("ArrowUp");
    expect(c.state.active).toBe(2);
  });

  test("Home and End jump to the first and last option once one is active, else move the caret", async () => {
    const { c } = await open();
    expect(c.key("End")).toBe("default");
    c.key("ArrowDown");
    expect(c.key("End")).toBe("handled");
    expect(c.state.active).toBe(2);
    c.key("Home");
    expect(c.state.active).toBe(0);
  });

  test("Enter selects the active option: the input takes its title and the list closes", async () => {
    const { c, selected } = await open();
    c.key("ArrowDown");
    c.key("ArrowDown");
    expect(c.key("Enter")).toBe("handled");
    expect(selected).toEqual([{ record: { id: "1", title: "Parma" }, query: "par" }]);
    expect(c.state).toMatchObject({ query: "Parma", open: false, active: -1 });
  });

  test("Enter with no active option submits, like Enter in a plain field", async () => {
    const { c, selected } = await open();
    expect(c.key("Enter")).toBe("submit");
    expect(selected).toEqual([]);
    expect(c.state.open).toBe(false);
  });

  test("Escape closes the list; a second Escape clears the input", async () => {
    const { c } = await open();
    c.key("ArrowDown");
    expect(c.key("Escape")).toBe("handled");
    expect(c.state).toMatchObject({ open: false, query: "par" });
    expect(c.key("Escape")).toBe("handled");
    expect(c.state.query).toBe("");
    expect(c.key("Escape")).toBe("default");
  });

  test("Down reopens a closed list (at the first option; Alt+Down without choosing one)", async () => {
    const { c } = await open();
    c.key("Escape");
    c.key("ArrowDown", true);
    expect(c.state).toMatchObject({ open: true, active: -1 });
    c.key("Escape");
    c.key("ArrowUp");
    expect(c.state).toMatchObject({ open: true, active: 2 });
  });

  test("Down after the results were dropped searches again", async () => {
    const { c, calls } = setup(0);
    c.input("par");
    c.close();
    expect(c.key("ArrowDown")).toBe("handled");
    await vi.advanceTimersByTimeAsync(0);
    expect(calls.map((x) => x.query)).toEqual(["par"]);
  });

  test("Tab closes the list and lets focus move on", async () => {
    const { c } = await open();
    c.key("ArrowDown");
    expect(c.key("Tab")).toBe("default");
    expect(c.state).toMatchObject({ open: false, active: -1 });
  });

  test("the pointer makes an option active and a click chooses it", async () => {
    const { c, selected } = await open();
    c.hover(1);
    expect(c.state.active).toBe(1);
    c.choose(2);
    expect(selected.map((s) => s.record.title)).toEqual(["Parla"]);
  });

  test("typing clears the active option, so Enter then submits what was typed", async () => {
    const { c } = await open();
    c.key("ArrowDown");
    c.input("parm");
    expect(c.key("Enter")).toBe("submit");
  });
});
