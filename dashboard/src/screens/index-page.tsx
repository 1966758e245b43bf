// One index: its records (found with the widget, shown as JSON, edited, deleted, added), bulk
// upload with progress, the versions timeline (what each version changed) with rollback, and the
// code to use it elsewhere.
import { createClient, SiftIngestFailedError, type components, type IngestStatus } from "@sift/sdk";
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { failureOf, formatBytes, formatDate, progressFetch, sift, type Failure } from "../api.ts";
import { linkTo, navigate } from "../router.ts";
import { announce, Code, ConfirmButton, Empty, FormError, Loading, useAction } from "../ui.tsx";

type Index = components["schemas"]["SiftIndex"];
type Version = components["schemas"]["IndexVersion"];
type Region = components["schemas"]["PlacedRegion"];
type Changes = components["schemas"]["VersionChanges"];
type Change = Changes["changes"][number];

const TABS = [
  { id: "records", label: "Records" },
  { id: "upload", label: "Upload" },
  { id: "versions", label: "Versions" },
  { id: "use", label: "Use it" },
] as const;
type Tab = (typeof TABS)[number]["id"];

export function IndexPage({ name, tab, recordId }: { name: string; tab: string | undefined; recordId?: string }) {
  const [index, setIndex] = useState<Index | undefined>();
  const load = useAction();
  const reload = () => load.run(async () => setIndex(await sift.indexes.get(name)));
  useEffect(() => void reload(), [name]);
  const current: Tab = TABS.some((t) => t.id === tab) ? (tab as Tab) : "records";
  const base = `/indexes/${encodeURIComponent(name)}`;

  return (
    <>
      <p class="crumbs">
        <a {...linkTo("/")}>Services and indexes</a> ›
      </p>
      <h1 tabIndex={-1}>Index “{name}”</h1>
      <FormError failure={load.failure} />
      {!index ? (
        !load.failure && <Loading what="the index" />
      ) : (
        <>
          <dl class="facts">
            <div>
              <dt>Service</dt>
              <dd>{index.serviceName}</dd>
            </div>
            <div>
              <dt>Visibility</dt>
              <dd>{index.visibility}</dd>
            </div>
            <div>
              <dt>Records</dt>
              <dd data-testid="record-count">{index.records.toLocaleString()}</dd>
            </div>
            <div>
              <dt>Active version</dt>
              <dd data-testid="active-version">{index.activeVersion}</dd>
            </div>
          </dl>
          {index.heldIn ? (
            <HeldElsewhere index={index} heldIn={index.heldIn} tab={current} />
          ) : (
            <>
              <nav class="tabs" aria-label="Index sections">
                {TABS.map((t) => (
                  <a key={t.id} {...linkTo(`${base}/${t.id}`)} aria-current={t.id === current ? "page" : undefined}>
                    {t.label}
                  </a>
                ))}
              </nav>
              {current === "records" && <Records index={index} changed={reload} recordId={recordId} />}
              {current === "upload" && <Upload index={index} changed={reload} />}
              {current === "versions" && <Versions index={index} changed={reload} />}
              {current === "use" && <UseIt index={index} />}
            </>
          )}
        </>
      )}
    </>
  );
}

/**
 * An index its service keeps in other regions: this region's server answers its records, uploads
 * and versions with 421, so the page sends the user to the same screen of a region that holds it
 * (the records go from there to the browser, never through this region).
 */
function HeldElsewhere({ index, heldIn, tab }: { index: Index; heldIn: Region[]; tab: Tab }) {
  const path = `/dashboard/indexes/${encodeURIComponent(index.name)}/${tab}`;
  return (
    <section class="held-elsewhere" aria-labelledby="held-title">
      <h2 id="held-title">Kept in other regions</h2>
      <p>
        The service “{index.serviceName}” keeps this index's records in {heldIn.map((r) => r.id).join(" and ")} only,
        not in this region. Its records, uploads and versions are opened there, with the same account:
      </p>
      <ul>
        {heldIn.map((r) => (
          <li key={r.id}>
            {r.url ? (
              <a href={`${r.url.replace(/\/+$/, "")}${path}`}>Open it in {r.id}</a>
            ) : (
              `${r.id} (no endpoint of its own)`
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** Parses the editor's JSON, naming the line of a syntax error. */
function parseRecord(text: string): { value?: Record<string, unknown>; error?: string } {
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value !== "object" || value === null || Array.isArray(value)) return { error: "must be a JSON object" };
    return { value: value as Record<string, unknown> };
  } catch (error) {
    return { error: `is not valid JSON: ${(error as Error).message}` };
  }
}

function RecordEditor(props: {
  id: string;
  initial: string;
  label: string;
  submit: string;
  onSave: (record: Record<string, unknown>) => Promise<unknown>;
}) {
  const [text, setText] = useState(props.initial);
  const [local, setLocal] = useState<string | undefined>();
  const save = useAction();
  useEffect(() => setText(props.initial), [props.initial]);
  const fieldErrors = save.failure ? Object.entries(save.failure.fields) : [];
  const errorId = `${props.id}-error`;
  const invalid = Boolean(local || fieldErrors.length);
  return (
    <form
      onSubmit={async (e) => {
        e.preventDefault();
        const parsed = parseRecord(text);
        setLocal(parsed.error);
        if (parsed.value) await save.run(() => props.onSave(parsed.value!));
      }}
    >
      <div class="field">
        <label for={props.id}>{props.label}</label>
        <textarea
          id={props.id}
          class="json"
          rows={Math.min(20, Math.max(6, text.split("\n").length + 1))}
          spellcheck={false}
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          aria-invalid={invalid ? "true" : undefined}
          aria-describedby={invalid ? errorId : undefined}
        />
        {invalid && (
          <div class="field-error" id={errorId}>
            {local && <p>The record {local}</p>}
            {fieldErrors.map(([field, message]) => (
              <p key={field}>
                <code>{field || "record"}</code> {message}
              </p>
            ))}
          </div>
        )}
      </div>
      <FormError failure={save.failure && { ...save.failure, fields: {} }} />
      <button type="submit" class="primary" disabled={save.busy}>
        {props.submit}
      </button>
    </form>
  );
}

function Records({ index, changed, recordId }: { index: Index; changed: () => unknown; recordId?: string }) {
  const host = useRef<HTMLDivElement>(null);
  const [selected, setSelected] = useState<string | undefined>(recordId);
  const [record, setRecord] = useState<components["schemas"]["IndexRecord"] | undefined>();
  const [failure, setFailure] = useState<Failure | undefined>();
  const [adding, setAdding] = useState(false);
  const [newId, setNewId] = useState("");
  const [lookupId, setLookupId] = useState("");
  // Asking for the same id again (after a 404, say) reads it again.
  const [lookups, setLookups] = useState(0);

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    let widget: HTMLElement | undefined;
    const onSelect = (e: Event) => setSelected((e as CustomEvent<{ record: { id: string } }>).detail.record.id);
    // The widget is its own chunk: the first screens load without it.
    void import("@sift/widgets").then(() => {
      widget = document.createElement("sift-autocomplete");
      widget.id = "record-search";
      widget.setAttribute("service", index.serviceName);
      widget.setAttribute("index", index.name);
      widget.setAttribute("placeholder", "Type a few letters of a title…");
      widget.addEventListener("sift-select", onSelect);
      el.replaceChildren(widget);
    });
    return () => widget?.removeEventListener("sift-select", onSelect);
  }, [index.name, index.serviceName]);

  // A link to a record (from the versions timeline) opens it.
  useEffect(() => setSelected(recordId), [recordId]);

  useEffect(() => {
    if (!selected) return;
    setRecord(undefined);
    setFailure(undefined);
    sift.records.get(index.name, selected).then(setRecord, (error) => setFailure(failureOf(error)));
  }, [selected, lookups, index.activeVersion]);

  const { id: _id, ...editable } = record ?? { id: "" };
  return (
    <section aria-labelledby="records-title">
      <h2 id="records-title">Records</h2>
      {index.records === 0 && (
        <Empty>
          <p>
            This version holds no records.{" "}
            <a {...linkTo(`/indexes/${encodeURIComponent(index.name)}/upload`)}>Upload a file</a> or add a record below.
          </p>
        </Empty>
      )}
      <div class="field">
        <label for="record-search">Find a record</label>
        <div ref={host} class="widget-host">
          <input disabled aria-label="Find a record (loading)" />
        </div>
      </div>
      <form
        class="lookup"
        onSubmit={(e) => {
          e.preventDefault();
          const id = lookupId.trim();
          if (!id) return;
          setSelected(id);
          setLookups((n) => n + 1);
        }}
      >
        <label for="record-id-lookup">Or open a record by its id</label>
        <div>
          <input id="record-id-lookup" value={lookupId} onInput={(e) => setLookupId(e.currentTarget.value)} />
          <button type="submit">Open</button>
        </div>
      </form>
      <FormError failure={failure} />
      {selected && !record && !failure && <Loading what={`record ${selected}`} />}
      {record && (
        <article class="record" aria-labelledby="record-title">
          <h3 id="record-title">
            Record <code>{record.id}</code>
          </h3>
          <RecordEditor
            id="record-json"
            label="The record as JSON"
            submit="Save record"
            initial={JSON.stringify(editable, null, 2)}
            onSave={async (body) => {
              const { indexVersion } = await sift.records.put(index.name, record.id, body as never);
              announce(`Saved: version ${indexVersion} is active`);
              setRecord(await sift.records.get(index.name, record.id));
              await changed();
            }}
          />
          <ConfirmButton
            label="Delete record"
            title={`Delete the record “${record.id}”?`}
            confirmLabel="Delete record"
            onConfirm={async () => {
              const { indexVersion } = await sift.records.delete(index.name, record.id);
              announce(`Deleted: version ${indexVersion} is active`);
              setSelected(undefined);
              setRecord(undefined);
              await changed();
            }}
          >
            <p>A new version without it becomes active. Earlier versions keep it: roll back to get it back.</p>
          </ConfirmButton>
        </article>
      )}
      <h3>Add a record</h3>
      {!adding ? (
        <button type="button" onClick={() => setAdding(true)}>
          Add a record
        </button>
      ) : (
        <div class="add-record">
          <div class="field">
            <label for="new-record-id">Record id</label>
            <input id="new-record-id" required value={newId} onInput={(e) => setNewId(e.currentTarget.value)} />
          </div>
          <RecordEditor
            id="new-record-json"
            label="The new record as JSON"
            submit="Add record"
            initial={JSON.stringify({ title: "", weight: 1, data: {} }, null, 2)}
            onSave={async (body) => {
              if (!newId.trim()) throw new Error("Give the record an id first");
              const { indexVersion } = await sift.records.put(index.name, newId.trim(), body as never);
              announce(`Added ${newId}: version ${indexVersion} is active`);
              setSelected(newId.trim());
              setAdding(false);
              setNewId("");
              await changed();
            }}
          />
        </div>
      )}
    </section>
  );
}

type UploadState =
  | { phase: "idle" }
  | { phase: "uploading"; file: string; sent: number; total: number }
  | { phase: "ingesting" | "done" | "failed"; file: string; status?: IngestStatus; failure?: Failure };

function Upload({ index, changed }: { index: Index; changed: () => unknown }) {
  const [state, setState] = useState<UploadState>({ phase: "idle" });
  const [dragging, setDragging] = useState(false);
  const [skipInvalid, setSkipInvalid] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  const busy = state.phase === "uploading" || state.phase === "ingesting";

  async function send(file: File) {
    setState({ phase: "uploading", file: file.name, sent: 0, total: file.size });
    const client = createClient({
      baseUrl: location.origin,
      fetch: progressFetch((sent, total) => setState({ phase: "uploading", file: file.name, sent, total })),
    });
    let version: string | undefined;
    try {
      const { indexVersion } = await client.uploadFile(index.name, file, { skipInvalid });
      version = indexVersion;
      announce(`${file.name} uploaded; ingesting as version ${indexVersion}`);
      setState({ phase: "ingesting", file: file.name });
      const status = await sift.waitForIngest(index.name, indexVersion, {
        intervalMs: 500,
        onStatus: (s) => setState({ phase: "ingesting", file: file.name, status: s }),
      });
      setState({ phase: "done", file: file.name, status });
      announce(`Ingest finished: ${status.recordsIngested} records in version ${indexVersion}`);
    } catch (error) {
      const status = error instanceof SiftIngestFailedError ? error.status : undefined;
      setState({ phase: "failed", file: file.name, status, failure: failureOf(error) });
      announce(version ? `Ingest of version ${version} failed` : `Upload of ${file.name} failed`);
    }
    await changed();
  }

  return (
    <section aria-labelledby="upload-title">
      <h2 id="upload-title">Upload a file</h2>
      <p>
        CSV with a header row, JSON Lines or a JSON array; gzip-compressed too. Each row needs a <code>title</code>;{" "}
        <code>id</code>, <code>weight</code>, <code>latitude</code>/<code>longitude</code> and <code>images</code> are
        read when present, other columns go into <code>data</code>. The upload replaces the index's records with a new
        version.
      </p>
      {/* biome-ignore lint/a11y/noStaticElementInteractions: a drop target for the mouse; the keyboard's way in is the file button inside it. */}
      <div
        class={`dropzone${dragging ? " dragging" : ""}`}
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => {
          e.preventDefault();
          setDragging(false);
          const file = e.dataTransfer?.files[0];
          if (file && !busy) void send(file);
        }}
      >
        <p>Drop a file here, or</p>
        <label class="button" for="upload-file">
          Choose a file…
        </label>
        <input
          ref={input}
          id="upload-file"
          class="visually-hidden"
          type="file"
          accept=".csv,.json,.jsonl,.ndjson,.gz,text/csv,application/json"
          disabled={busy}
          onChange={(e) => {
            const file = e.currentTarget.files?.[0];
            if (file) void send(file);
            e.currentTarget.value = "";
          }}
        />
      </div>
      <label class="check">
        <input type="checkbox" checked={skipInvalid} onChange={(e) => setSkipInvalid(e.currentTarget.checked)} /> Skip
        invalid lines and ingest the rest (otherwise one bad line fails the file)
      </label>
      <UploadProgress state={state} />
    </section>
  );
}

function UploadProgress({ state }: { state: UploadState }) {
  if (state.phase === "idle") return null;
  if (state.phase === "uploading") {
    return (
      <div class="progress">
        <label for="upload-progress">
          Uploading {state.file}: {formatBytes(state.sent)} of {formatBytes(state.total)}
        </label>
        <progress id="upload-progress" max={state.total || 1} value={state.sent} />
      </div>
    );
  }
  const s = state.status;
  const headline =
    state.phase === "ingesting"
      ? `Ingesting ${state.file}: ${s ? s.state.replace("_", " ") : "queued"}`
      : state.phase === "done"
        ? `Ingested ${state.file}: version ${s?.indexVersion} is ${s?.activate ? "active" : "ready"}`
        : `${state.file} was not ingested`;
  return (
    <div class={`progress ${state.phase}`} data-testid="ingest">
      <p>
        <strong>{headline}</strong>
      </p>
      {state.phase === "ingesting" && (
        <progress aria-label="Ingest progress" max={s?.bytesReceived || 1} value={s?.bytesRead ?? 0} />
      )}
      {s && (
        <p>
          {s.recordsIngested.toLocaleString()} records ingested, {s.recordsInvalid.toLocaleString()} invalid, read{" "}
          {formatBytes(s.bytesRead)} of {formatBytes(s.bytesReceived)}
          {s.format ? ` (${s.format}${s.gzip ? ", gzip" : ""})` : ""}
          {s.durationMs !== undefined ? ` in ${(s.durationMs / 1000).toFixed(1)} s` : ""}.
        </p>
      )}
      {state.failure && !s?.errors.length && <p class="error">{state.failure.message}</p>}
      {s?.failureReason && <p class="error">{s.failureReason}</p>}
      {s && s.errors.length > 0 && (
        <>
          <h3>Lines with errors ({s.errorCount.toLocaleString()})</h3>
          <ol class="line-errors">
            {s.errors.map((e) => (
              <li key={`${e.line}-${e.field}`}>
                Line {e.line}
                {e.field ? (
                  <>
                    , <code>{e.field}</code>
                  </>
                ) : null}
                : {e.message}
              </li>
            ))}
          </ol>
        </>
      )}
    </div>
  );
}

/** Version 0: the empty version an index is created with. */
const isCreation = (v: Version) => v.kind === "bulk" && v.parent === null && v.records === 0;

/** What kind of version it is: the line above what it changed. */
function kindOf(v: Version, parent: Version | undefined): string {
  if (v.kind === "purge") return "purge";
  if (v.kind === "bulk") return isCreation(v) ? "index created, empty" : "bulk upload";
  if (v.kind === "checkpoint") return `checkpoint of ${parent ? `version ${parent.version}` : "the chain"}`;
  return "record change";
}

/** Changed ids per page of the list under an entry. */
const PAGE = 20;
/** How a record change reads: the words before and after the record's id. */
const SAID: Record<Change["change"], [string, string]> = {
  added: ["Added record", ""],
  updated: ["Updated record", ""],
  deleted: ["Deleted record", ""],
  unchanged: ["Saved record", " again, with no change"],
  purged: ["Erased record", " from every version"],
};

const plural = (n: number, one: string) => `${n.toLocaleString()} ${one}${n === 1 ? "" : "s"}`;

/** A record id: a link that opens it in the record browser, unless this version no longer holds it. */
function RecordRef({ index, change }: { index: Index; change: Change }) {
  if (change.change === "deleted" || change.change === "purged") return <code>{change.id}</code>;
  return (
    <a {...linkTo(`/indexes/${encodeURIComponent(index.name)}/records/${encodeURIComponent(change.id)}`)}>
      <code>{change.id}</code>
    </a>
  );
}

/**
 * What one version changed (GET …/versions/{version}/changes), loaded once its entry scrolls into
 * view: a record change names its record, an upload counts what it added, updated and deleted and
 * lists the ids a page at a time.
 */
function VersionChanges({ index, v }: { index: Index; v: Version }) {
  const host = useRef<HTMLDivElement>(null);
  const [changes, setChanges] = useState<Changes | undefined>();
  const [failure, setFailure] = useState<Failure | undefined>();
  const more = useAction();
  const ready = v.state === "ready" && !isCreation(v);
  useEffect(() => {
    const el = host.current;
    if (!el || !ready) return;
    let done = false;
    const load = () => {
      if (done) return;
      done = true;
      sift.versions.changes(index.name, v.version, { limit: PAGE }).then(setChanges, (e) => setFailure(failureOf(e)));
    };
    if (typeof IntersectionObserver === "undefined") return load();
    const seen = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) load();
    });
    seen.observe(el);
    return () => seen.disconnect();
    // Again after each write: a purge rewrites what earlier versions hold.
  }, [index.name, v.version, ready, index.activeVersion]);

  if (!ready) return null;
  let body: ComponentChildren = "Loading what it changed…";
  if (failure) {
    // 501: the engine cannot compare versions; anything else is worth saying as it is.
    body = failure.status === 501 ? "What it changed is not known on this deployment." : failure.message;
  } else if (changes) {
    const { counts, changes: listed } = changes;
    const total = counts.added + counts.updated + counts.deleted;
    const only = listed.length === 1 && !changes.next ? listed[0] : undefined;
    if (changes.kind === "checkpoint") body = "No record changed: the same records, written as one checkpoint.";
    else if (only && changes.kind !== "bulk") {
      const [before, after] = SAID[only.change];
      body = (
        <>
          {before} <RecordRef index={index} change={only} />
          {after}
        </>
      );
    } else if (total === 0 && listed.length === 0) body = "No record changed.";
    else {
      const parts = [
        `${counts.added.toLocaleString()} added`,
        `${counts.updated.toLocaleString()} updated`,
        `${counts.deleted.toLocaleString()} deleted`,
        `${counts.unchanged.toLocaleString()} unchanged`,
      ];
      body = (
        <>
          {changes.base ? `Against version ${changes.base}: ` : "Against an empty index: "}
          {parts.join(", ")}
          {listed.length > 0 && (
            <details>
              <summary>
                {plural(total, "changed record")} of version {v.version}
              </summary>
              <ul class="changed-records">
                {listed.map((c) => (
                  <li key={c.id}>
                    <span class={`change ${c.change}`}>{c.change}</span> <RecordRef index={index} change={c} />
                  </li>
                ))}
              </ul>
              {changes.next && (
                <button
                  type="button"
                  disabled={more.busy}
                  onClick={() =>
                    more.run(async () => {
                      const page = await sift.versions.changes(index.name, v.version, {
                        limit: PAGE,
                        after: changes.next,
                      });
                      setChanges({ ...page, changes: [...listed, ...page.changes] });
                      announce(`${page.changes.length} more changed records of version ${v.version}`);
                    })
                  }
                >
                  Show more changed records
                </button>
              )}
              <FormError failure={more.failure} />
            </details>
          )}
        </>
      );
    }
  }
  return (
    <div ref={host} class="version-changes" data-testid={`changes-${v.version}`}>
      {body}
    </div>
  );
}

function Versions({ index, changed }: { index: Index; changed: () => unknown }) {
  const [versions, setVersions] = useState<Version[] | undefined>();
  const list = useAction();
  const act = useAction();
  const load = () => list.run(async () => setVersions((await sift.versions.list(index.name)).versions));
  useEffect(() => void load(), [index.name, index.activeVersion]);
  const byId = new Map(versions?.map((v) => [v.version, v]));
  const active = versions?.find((v) => v.active);
  return (
    <section aria-labelledby="versions-title">
      <h2 id="versions-title">Versions</h2>
      <p class="hint">
        Every change makes a version. Activating an older one rolls the index back at once; nothing is lost.
      </p>
      <button
        type="button"
        disabled={act.busy}
        onClick={async () => {
          const done = await act.run(() => sift.versions.coalesce(index.name));
          if (done) announce(`Coalesced: version ${done.indexVersion} is active`);
          await changed();
        }}
      >
        Coalesce changes into a checkpoint
      </button>
      <FormError failure={act.failure ?? list.failure} />
      {!versions ? (
        !list.failure && <Loading what="versions" />
      ) : (
        <ol class="timeline">
          {versions.map((v) => (
            <li key={v.version} class={v.active ? "active" : ""}>
              <div>
                <strong>Version {v.version}</strong> {v.active && <span class="badge">active</span>}{" "}
                {v.state !== "ready" && <span class="badge warn">{v.state}</span>}
                <p>
                  {kindOf(v, v.parent ? byId.get(v.parent) : undefined)}
                  {v.records !== undefined ? ` · ${v.records.toLocaleString()} records` : ""} ·{" "}
                  {formatDate(v.createdAt)}
                  {v.parent ? ` · from ${v.parent}` : ""}
                </p>
                <VersionChanges index={index} v={v} />
              </div>
              {!v.active && v.state === "ready" && (
                <button
                  type="button"
                  disabled={act.busy}
                  onClick={async () => {
                    if (await act.run(() => sift.versions.activate(index.name, v.version)))
                      announce(`Version ${v.version} is active`);
                    await changed();
                  }}
                >
                  {active && v.createdAt < active.createdAt ? "Roll back to" : "Activate"} version {v.version}
                </button>
              )}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

function UseIt({ index }: { index: Index }) {
  const origin = location.origin;
  const snippet = `<script src="${origin}/widget/sift-autocomplete.iife.js" defer></script>
<label for="search">Search</label>
<sift-autocomplete id="search" base-url="${origin}"
  service="${index.serviceName}" index="${index.name}"
  api-key="pk-sift-srh-YOUR-KEY" weighted placeholder="Search…"></sift-autocomplete>
<script>
  document.addEventListener("sift-select", (e) => console.log(e.detail.record));
</script>`;
  const sdk = `import { createClient } from "@sift/sdk";

// On a server: an svc key, kept secret (an environment variable, never a page).
const sift = createClient({ baseUrl: "${origin}", apiKey: process.env.SIFT_API_KEY });

const { suggestions } = await sift.search({
  query: "new yo",
  serviceName: "${index.serviceName}",
  indexName: "${index.name}",
  weighted: true,
});

await sift.records.put("${index.name}", "my-id", { title: "A new record", weight: 10 });`;
  return (
    <section aria-labelledby="use-title">
      <h2 id="use-title">Use it</h2>
      <h3>On a web page</h3>
      {index.visibility === "PRIVATE" && (
        <p class="warning">
          This index is PRIVATE: a page's srh key cannot search it. Make it PUBLIC on the{" "}
          <a {...linkTo("/")}>services and indexes</a> screen first.
        </p>
      )}
      <p>
        Create an <strong>srh</strong> key on the <a {...linkTo("/keys")}>API keys</a> screen, put it in place of{" "}
        <code>pk-sift-srh-YOUR-KEY</code>, and paste this into your page:
      </p>
      <Code label="widget snippet">{snippet}</Code>
      <h3>From your code</h3>
      <p>
        <code>npm install @sift/sdk</code>, then:
      </p>
      <Code label="SDK example">{sdk}</Code>
      <p>
        <a href="/docs">The API reference</a> lists every operation.
      </p>
      <button type="button" onClick={() => navigate(`/indexes/${encodeURIComponent(index.name)}/records`)}>
        Try it in the record browser
      </button>
    </section>
  );
}
