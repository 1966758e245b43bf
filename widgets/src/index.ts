// Importing this module (or loading the one-file build with <script src>) defines
// <sift-autocomplete>; a page that defined it already (two copies of the script) keeps the first.
import { SiftAutocomplete } from "./element.ts";

if (!customElements.get("sift-autocomplete")) customElements.define("sift-autocomplete", SiftAutocomplete);

export { SiftAutocomplete };
export {
  AutocompleteController,
  type ControllerOptions,
  type KeyOutcome,
  type State,
  type Status,
} from "./controller.ts";
export { highlight, type Segment } from "./highlight.ts";

declare global {
  interface HTMLElementTagNameMap {
    "sift-autocomplete": SiftAutocomplete;
  }
  interface HTMLElementEventMap {
    "sift-query": CustomEvent<{ query: string }>;
    "sift-select": CustomEvent<{ record: import("@sift/sdk/search").SearchResult; query: string }>;
    "sift-error": CustomEvent<{ error: unknown; query: string }>;
  }
}
