// Services and indexes: the tenant's whole catalog on one screen, each with its create form.
import type { components } from "@sift/sdk";
import { useEffect, useState } from "preact/hooks";
import { sift } from "../api.ts";
import { linkTo } from "../router.ts";
import { announce, ConfirmButton, Empty, Field, FormError, Loading, useAction } from "../ui.tsx";

type Service = components["schemas"]["SiftService"];
type Index = components["schemas"]["SiftIndex"];
type Region = components["schemas"]["Region"];

export function Overview() {
  const [services, setServices] = useState<Service[] | undefined>();
  const [indexes, setIndexes] = useState<Index[] | undefined>();
  const [regions, setRegions] = useState<Region[]>([]);
  const list = useAction();
  const load = () =>
    list.run(async () => {
      const [s, i] = await Promise.all([sift.services.list(), sift.indexes.list()]);
      setServices(s.services);
      setIndexes(i.indexes);
    });
  useEffect(() => {
    void load();
    sift.regions().then(
      (r) => setRegions(r.regions),
      // Without the list the service form offers no region choice; the server's default is all.
      () => setRegions([]),
    );
  }, []);

  return (
    <>
      <h1 tabIndex={-1}>Services and indexes</h1>
      <FormError failure={list.failure} />
      {!services || !indexes ? (
        !list.failure && <Loading what="your services and indexes" />
      ) : (
        <>
          <ServiceSection services={services} indexes={indexes} regions={regions} reload={load} />
          <IndexSection services={services} indexes={indexes} regions={regions} reload={load} />
        </>
      )}
    </>
  );
}

function ServiceSection(props: { services: Service[]; indexes: Index[]; regions: Region[]; reload: () => unknown }) {
  const create = useAction();
  const [name, setName] = useState("");
  const [picked, setPicked] = useState<string[]>([]);
  const [replicas, setReplicas] = useState("1");
  return (
    <section aria-labelledby="services-title">
      <h2 id="services-title">Services</h2>
      <p class="hint">A service groups indexes and says where they are served.</p>
      {props.services.length === 0 ? (
        <Empty>
          <p>No services yet. Create one to hold your first index.</p>
        </Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Regions</th>
              <th scope="col">Replicas</th>
              <th scope="col">Indexes</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {props.services.map((s) => (
              <tr key={s.name}>
                <th scope="row">{s.name}</th>
                <td>{s.regions.length === props.regions.length ? "all" : s.regions.join(", ")}</td>
                <td>{s.replicas}</td>
                <td>{props.indexes.filter((i) => i.serviceName === s.name).length}</td>
                <td>
                  <ConfirmButton
                    label="Delete"
                    accessibleLabel={`Delete service ${s.name}`}
                    title={`Delete the service “${s.name}”?`}
                    confirmLabel="Delete service"
                    onConfirm={async () => {
                      await sift.services.delete(s.name);
                      announce(`Service ${s.name} deleted`);
                      await props.reload();
                    }}
                  >
                    <p>A service that still holds indexes cannot be deleted: delete its indexes first.</p>
                  </ConfirmButton>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <details open={props.services.length === 0}>
        <summary>Create a service</summary>
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            const body = { name, replicas: Number(replicas), ...(picked.length ? { regions: picked } : {}) };
            if (!(await create.run(() => sift.services.create(body)))) return;
            announce(`Service ${name} created`);
            setName("");
            setPicked([]);
            await props.reload();
          }}
        >
          <Field
            form="service"
            name="name"
            label="Service name"
            hint="Lower-case letters, digits and dashes; unique across Sift."
            required
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
            failure={create.failure}
          />
          {props.regions.length > 0 && (
            <fieldset aria-describedby={create.failure?.fields.regions ? "service-regions-error" : undefined}>
              <legend>Regions (none checked: all of them)</legend>
              <div class="regions">
                {props.regions.map((r) => (
                  <label key={r.id}>
                    <input
                      type="checkbox"
                      name="regions"
                      value={r.id}
                      checked={picked.includes(r.id)}
                      onChange={(e) =>
                        setPicked(e.currentTarget.checked ? [...picked, r.id] : picked.filter((x) => x !== r.id))
                      }
                    />{" "}
                    {r.name}
                  </label>
                ))}
              </div>
              {create.failure?.fields.regions && (
                <p class="field-error" id="service-regions-error">
                  {create.failure.fields.regions}
                </p>
              )}
            </fieldset>
          )}
          <Field
            form="service"
            name="replicas"
            label="Replicas"
            type="number"
            min={1}
            max={5}
            required
            value={replicas}
            onInput={(e) => setReplicas(e.currentTarget.value)}
            failure={create.failure}
          />
          <FormError failure={create.failure} shown={["name", "regions", "replicas"]} />
          <button type="submit" class="primary" disabled={create.busy}>
            Create service
          </button>
        </form>
      </details>
    </section>
  );
}

/**
 * The regions that have set the index aside (D-395): an entry of it could not be applied there,
 * so they answer 503 for it until a snapshot brings it back; searches go to other regions.
 */
function SetAsideHint(props: { regions: Region[]; index: string }) {
  const aside = props.regions.filter((r) => r.indexes?.some((i) => i.indexName === props.index && i.setAside));
  if (aside.length === 0) return null;
  return <span class="hint"> not served in {aside.map((r) => r.id).join(", ")} at the moment</span>;
}

function IndexSection(props: { services: Service[]; indexes: Index[]; regions: Region[]; reload: () => unknown }) {
  const create = useAction();
  const change = useAction();
  const [name, setName] = useState("");
  const [serviceName, setServiceName] = useState("");
  const [visibility, setVisibility] = useState<"PUBLIC" | "PRIVATE">("PRIVATE");
  const service = serviceName || props.services[0]?.name || "";
  return (
    <section aria-labelledby="indexes-title">
      <h2 id="indexes-title">Indexes</h2>
      <FormError failure={change.failure} />
      {props.indexes.length === 0 ? (
        <Empty>
          <p>No indexes yet. {props.services.length ? "Create one below." : "Create a service first."}</p>
        </Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Service</th>
              <th scope="col">Records</th>
              <th scope="col">Active version</th>
              <th scope="col">Visibility</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {props.indexes.map((i) => (
              <tr key={i.name}>
                <th scope="row">
                  <a {...linkTo(`/indexes/${encodeURIComponent(i.name)}`)}>{i.name}</a>
                  {i.heldIn && <span class="hint"> kept in {i.heldIn.map((r) => r.id).join(", ")}</span>}
                  <SetAsideHint regions={props.regions} index={i.name} />
                </th>
                <td>{i.serviceName}</td>
                <td>{i.records.toLocaleString()}</td>
                <td>{i.activeVersion}</td>
                <td>
                  <label class="visually-hidden" for={`vis-${i.name}`}>
                    Visibility of {i.name}
                  </label>
                  <select
                    id={`vis-${i.name}`}
                    value={i.visibility}
                    disabled={change.busy}
                    onChange={async (e) => {
                      const value = e.currentTarget.value as "PUBLIC" | "PRIVATE";
                      if (await change.run(() => sift.indexes.update(i.name, { visibility: value })))
                        announce(`${i.name} is now ${value}`);
                      await props.reload();
                    }}
                  >
                    <option value="PRIVATE">PRIVATE</option>
                    <option value="PUBLIC">PUBLIC</option>
                  </select>
                </td>
                <td>
                  <ConfirmButton
                    label="Delete"
                    accessibleLabel={`Delete index ${i.name}`}
                    title={`Delete the index “${i.name}”?`}
                    confirmLabel="Delete index"
                    onConfirm={async () => {
                      await sift.indexes.delete(i.name);
                      announce(`Index ${i.name} deleted`);
                      await props.reload();
                    }}
                  >
                    <p>
                      Its {i.records.toLocaleString()} records and every version are deleted. Searches of it fail from
                      now on.
                    </p>
                  </ConfirmButton>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {props.services.length > 0 && (
        <details open={props.indexes.length === 0}>
          <summary>Create an index</summary>
          <form
            onSubmit={async (e) => {
              e.preventDefault();
              const made = await create.run(() => sift.indexes.create({ name, serviceName: service, visibility }));
              if (!made) return;
              announce(`Index ${name} created`);
              setName("");
              await props.reload();
            }}
          >
            <Field
              form="index"
              name="name"
              label="Index name"
              required
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
              failure={create.failure}
            />
            <div class="field">
              <label for="index-serviceName">Service</label>
              <select
                id="index-serviceName"
                value={service}
                onChange={(e) => setServiceName(e.currentTarget.value)}
                aria-invalid={create.failure?.fields.serviceName ? "true" : undefined}
              >
                {props.services.map((s) => (
                  <option key={s.name} value={s.name}>
                    {s.name}
                  </option>
                ))}
              </select>
              {create.failure?.fields.serviceName && <p class="field-error">{create.failure.fields.serviceName}</p>}
            </div>
            <fieldset>
              <legend>Visibility</legend>
              <label>
                <input
                  type="radio"
                  name="visibility"
                  value="PRIVATE"
                  checked={visibility === "PRIVATE"}
                  onChange={() => setVisibility("PRIVATE")}
                />{" "}
                PRIVATE: searched only with your secret keys or this dashboard
              </label>
              <label>
                <input
                  type="radio"
                  name="visibility"
                  value="PUBLIC"
                  checked={visibility === "PUBLIC"}
                  onChange={() => setVisibility("PUBLIC")}
                />{" "}
                PUBLIC: searched by web pages with an srh key
              </label>
            </fieldset>
            <FormError failure={create.failure} shown={["name", "serviceName"]} />
            <button type="submit" class="primary" disabled={create.busy}>
              Create index
            </button>
          </form>
        </details>
      )}
    </section>
  );
}
