// <sift-autocomplete>: the WAI-ARIA 1.2 combobox (input + listbox in one shadow root, so that
// aria-activedescendant and aria-controls resolve), a form-associated element, and the renderer
// of the controller's state.
import { createSearchClient, type SearchClient, type SearchParams, type SearchResult } from "@sift/sdk/search";
import { AutocompleteController, type State } from "./controller.ts";
import { locate, type Position } from "./geo.ts";
import { regionsOf } from "./regions.ts";
import { renderRow } from "./render.ts";
import { styles } from "./styles.ts";

const DEFAULT_DEBOUNCE_MS = 150;
/** A pointer that travelled further than this between down and click was scrolling, not choosing. */
const TAP_SLOP_PX = 10;

const template = `<style>${styles}</style><div part="field"><input part="input" type="text" role="combobox" aria-autocomplete="list" aria-expanded="false" aria-controls="listbox" autocomplete="off" autocapitalize="off" spellcheck="false" enterkeyhint="search" maxlength="512"><span part="spinner" hidden></span></div><div part="popup" hidden><ul part="listbox" id="listbox" role="listbox"></ul><div part="message" hidden></div></div><div class="sr" role="status"></div>`;

export class SiftAutocomplete extends HTMLElement {
  static formAssociated = true;
  static observedAttributes = [
    "base-url",
    "api-key",
    "service",
    "index",
    "weighted",
    "limit",
    "scope",
    "region",
    "regions",
    "filter",
    "geo",
    "placeholder",
    "label",
    "detail-field",
    "typo-tolerance",
  ];

  private readonly internals = this.attachInternals();
  private readonly root = this.attachShadow({ mode: "open", delegatesFocus: true });
  private readonly controller: AutocompleteController<SearchResult>;
  private readonly input: HTMLInputElement;
  private readonly spinner: HTMLElement;
  private readonly popup: HTMLElement;
  private readonly listbox: HTMLElement;
  private readonly message: HTMLElement;
  private readonly live: HTMLElement;
  private client: SearchClient | undefined;
  private position: Position | undefined;
  private geoAsked = false;
  private shown: readonly SearchResult[] | undefined;
  private shownStatus = "";
  private activeRow: Element | undefined;
  private pointerDown: [number, number] | undefined;

  constructor() {
    super();
    this.root.innerHTML = template;
    const $ = <T extends HTMLElement>(selector: string) => this.root.querySelector(selector) as T;
    this.input = $("input");
    this.spinner = $("[part=spinner]");
    this.popup = $("[part=popup]");
    this.listbox = $("[role=listbox]");
    this.message = $("[part=message]");
    this.live = $("[role=status]");
    this.controller = new AutocompleteController<SearchResult>({
      search: (query, signal) => this.search(query, signal),
      debounceMs: () => {
        const ms = Number(this.getAttribute("debounce") ?? DEFAULT_DEBOUNCE_MS);
        return Number.isFinite(ms) && ms >= 0 ? ms : DEFAULT_DEBOUNCE_MS;
      },
      onChange: (state) => this.render(state),
      onQuery: (query) => this.emit("sift-query", { query }),
      onSelect: (record, query) => this.emit("sift-select", { record, query }),
      onError: (error, query) => this.emit("sift-error", { error, query }),
    });

    this.input.addEventListener("input", () => this.controller.input(this.input.value));
    this.input.addEventListener("keydown", (e) => this.onKey(e));
    this.input.addEventListener("blur", () => this.controller.close());
    this.input.addEventListener("focus", () => {
      this.askPosition();
      // Measure the regions while the user starts typing, not after the first keystroke.
      if (!this.hasAttribute("regions")) return;
      // biome-ignore lint/plugin: a failed look-up is retried by the first search, which reports it.
      void this.searchClient()
        .router.hosts()
        .catch(() => undefined);
    });
    // Keeps focus in the input when an option is pressed (mouse, and touch's compatibility events).
    this.listbox.addEventListener("mousedown", (e) => e.preventDefault());
    this.listbox.addEventListener("pointerdown", (e) => (this.pointerDown = [e.clientX, e.clientY]));
    this.listbox.addEventListener("pointermove", (e) => {
      if (e.pointerType === "mouse") this.controller.hover(this.rowIndex(e.target));
    });
    this.listbox.addEventListener("click", (e) => {
      const down = this.pointerDown;
      this.pointerDown = undefined;
      if (down && Math.hypot(e.clientX - down[0], e.clientY - down[1]) > TAP_SLOP_PX) return;
      this.controller.choose(this.rowIndex(e.target));
    });
  }

  /** The text in the input; setting it does not search. */
  get value(): string {
    return this.controller.state.query;
  }

  set value(text: string) {
    this.controller.text(text);
  }

  get form(): HTMLFormElement | null {
    return this.internals.form;
  }

  connectedCallback(): void {
    this.label();
    this.render(this.controller.state);
  }

  disconnectedCallback(): void {
    this.controller.close();
  }

  attributeChangedCallback(name: string): void {
    if (name === "base-url" || name === "api-key" || name === "regions") this.client = undefined;
    this.controller.reset();
    this.label();
  }

  formResetCallback(): void {
    this.controller.text("");
  }

  formStateRestoreCallback(state: string | null): void {
    this.controller.text(state ?? "");
  }

  formDisabledCallback(disabled: boolean): void {
    this.input.disabled = disabled;
  }

  private searchClient(): SearchClient {
    this.client ??= createSearchClient({
      baseUrl: this.getAttribute("base-url") || location.origin,
      apiKey: this.getAttribute("api-key") || undefined,
      regions: regionsOf(this.getAttribute("regions")),
    });
    return this.client;
  }

  private search(query: string, signal: AbortSignal): Promise<SearchResult[]> {
    const params: SearchParams = {
      query,
      indexName: this.getAttribute("index") ?? "",
      serviceName: this.getAttribute("service") ?? "",
      // The server marks what matched: the rows draw its ranges.
      highlight: true,
    };
    if (this.getAttribute("typo-tolerance") === "false") params.typoTolerance = false;
    const weighted = this.getAttribute("weighted");
    if (weighted !== null && weighted !== "false") params.weighted = true;
    const limit = Number(this.getAttribute("limit"));
    if (Number.isInteger(limit) && limit > 0) params.limit = Math.min(limit, 100);
    const scope = this.getAttribute("scope");
    if (scope === "all" || scope === "title") params.scope = scope;
    const region = this.getAttribute("region");
    if (region) params.regionId = region;
    const filter = this.getAttribute("filter");
    if (filter) params.filter = filter;
    if (this.position) Object.assign(params, this.position);
    return this.searchClient()
      .search(params, { signal })
      .then((r) => r.suggestions);
  }

  /** Geolocation is asked for only when the page opted in, and only once the user shows intent. */
  private askPosition(): void {
    if (this.geoAsked || !this.hasAttribute("geo")) return;
    this.geoAsked = true;
    void locate().then((position) => {
      this.position = position;
      if (position) this.controller.reset();
    });
  }

  private onKey(e: KeyboardEvent): void {
    // Keys that confirm an IME composition belong to the composition.
    if (e.isComposing || e.ctrlKey || e.metaKey) return;
    const outcome = this.controller.key(e.key, e.altKey);
    if (outcome === "default") return;
    e.preventDefault();
    if (outcome === "submit") this.submitForm();
  }

  /** Enter with no active option: what Enter in a plain text field of the form would do. */
  private submitForm(): void {
    const form = this.internals.form;
    if (!form) return;
    const button = [...form.elements].find(
      (e): e is HTMLButtonElement | HTMLInputElement =>
        (e instanceof HTMLButtonElement && e.type === "submit") ||
        (e instanceof HTMLInputElement && (e.type === "submit" || e.type === "image")),
    );
    // HTML's implicit submission: a disabled default button blocks it.
    if (button?.disabled) return;
    form.requestSubmit(button);
  }

  private rowIndex(target: EventTarget | null): number {
    const row = target instanceof Element ? target.closest("[role=option]") : null;
    return row ? [...this.listbox.children].indexOf(row) : -1;
  }

  /** Scrolls the listbox, and never the page (as scrollIntoView may), to show `row`. */
  private reveal(row: HTMLElement): void {
    const { listbox } = this;
    if (row.offsetTop < listbox.scrollTop) listbox.scrollTop = row.offsetTop;
    else if (row.offsetTop + row.offsetHeight > listbox.scrollTop + listbox.clientHeight) {
      listbox.scrollTop = row.offsetTop + row.offsetHeight - listbox.clientHeight;
    }
  }

  private label(): void {
    const labels = [...this.internals.labels]
      .map((l) => l.textContent?.trim())
      .filter(Boolean)
      .join(" ");
    const placeholder = this.getAttribute("placeholder");
    const name = this.getAttribute("label") || labels || placeholder || "Search";
    this.input.setAttribute("aria-label", name);
    this.listbox.setAttribute("aria-label", name);
    if (placeholder === null) this.input.removeAttribute("placeholder");
    else this.input.placeholder = placeholder;
  }

  private emit(type: string, detail: object): void {
    this.dispatchEvent(new CustomEvent(type, { detail, bubbles: true, composed: true }));
  }

  private render(state: Readonly<State<SearchResult>>): void {
    if (this.input.value !== state.query) this.input.value = state.query;
    this.internals.setFormValue(state.query);

    const fresh = state.results !== this.shown || state.status !== this.shownStatus;
    if (state.results !== this.shown) {
      this.shown = state.results;
      const options = {
        thumbnails: state.results.some((r) => r.images?.[0]),
        detailField: this.getAttribute("detail-field"),
      };
      this.listbox.replaceChildren(...state.results.map((r, i) => renderRow(r, i, options)));
      this.activeRow = undefined;
    }
    this.shownStatus = state.status;

    const listed = state.open && state.results.length > 0;
    const note = !state.open
      ? ""
      : state.status === "empty"
        ? `No results for “${state.resultsQuery}”`
        : state.status === "error"
          ? "Search is unavailable"
          : "";
    this.listbox.hidden = !listed;
    this.message.hidden = note === "";
    this.message.textContent = note;
    this.popup.hidden = !listed && note === "";
    this.spinner.hidden = state.status !== "loading";
    this.input.setAttribute("aria-expanded", String(listed));

    const row = listed && state.active >= 0 ? this.listbox.children[state.active] : undefined;
    if (row !== this.activeRow) {
      this.activeRow?.setAttribute("aria-selected", "false");
      row?.setAttribute("aria-selected", "true");
      if (row instanceof HTMLElement) this.reveal(row);
      this.activeRow = row;
    }
    if (row) this.input.setAttribute("aria-activedescendant", row.id);
    else this.input.removeAttribute("aria-activedescendant");

    if (fresh && state.open) {
      const n = state.results.length;
      const said = state.status === "results" ? `${n} result${n === 1 ? "" : "s"}` : note;
      // Repeating the same words would not be announced again: vary them invisibly.
      if (said) this.live.textContent = said === this.live.textContent ? `${said}\u00a0` : said;
    }
  }
}
