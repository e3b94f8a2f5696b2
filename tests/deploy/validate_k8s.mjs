// Validates Kubernetes objects offline against the API's OpenAPI schema, as compiled into JSON-schema
// validators by the npm package kubernetes-models (types, required fields, enums, formats).
// Unknown fields, which those validators (like the OpenAPI schema) let through, are reported too:
// every declared property is read by the compiled validator, so a key of the object that the
// validator never read is not in the schema (what kubectl --validate=strict reports). Maps (labels,
// data, ...) are iterated by the validator, which marks all of their keys as known.
//
//   node validate_k8s.mjs < objects.json      (a JSON array of objects)
// Prints one line per problem ("Kind/name: path: message") and exits 1 if there is any.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const modelsDir = process.env.OKNA_K8S_MODELS || "/opt/openkeel-tools/node_modules/kubernetes-models";

function modulePath(apiVersion) {
  // "v1" -> core; "apps/v1" -> apps/v1; "rbac.authorization.k8s.io/v1" -> same folder name.
  return `${modelsDir}/${apiVersion === "v1" ? "v1" : apiVersion}/index.js`;
}

// Wraps an object tree so that reads and key enumerations are recorded per object.
function tracked(root) {
  const seen = new WeakMap(); // target -> {read: Set, enumerated: bool}
  const proxies = new WeakMap();
  const wrap = (obj) => {
    if (obj === null || typeof obj !== "object") return obj;
    if (proxies.has(obj)) return proxies.get(obj);
    const info = { read: new Set(), enumerated: false };
    seen.set(obj, info);
    const p = new Proxy(obj, {
      get(t, k, r) {
        if (typeof k === "string") info.read.add(k);
        return wrap(Reflect.get(t, k, r));
      },
      has(t, k) {
        if (typeof k === "string") info.read.add(k);
        return Reflect.has(t, k);
      },
      ownKeys(t) {
        info.enumerated = true;
        return Reflect.ownKeys(t);
      },
    });
    proxies.set(obj, p);
    return p;
  };
  return { proxy: wrap(root), seen };
}

function unknownFields(obj, seen, path, out) {
  if (obj === null || typeof obj !== "object") return;
  const info = seen.get(obj);
  if (Array.isArray(obj)) {
    obj.forEach((v, i) => unknownFields(v, seen, `${path}/${i}`, out));
    return;
  }
  for (const k of Object.keys(obj)) {
    if (info && !info.enumerated && !info.read.has(k)) out.push(`${path}/${k}: unknown field`);
    else unknownFields(obj[k], seen, `${path}/${k}`, out);
  }
}

const objects = JSON.parse(readFileSync(0, "utf8"));
const problems = [];
for (const obj of objects) {
  const id = `${obj.kind}/${obj.metadata?.name}`;
  let Model;
  try {
    Model = (await import(modulePath(obj.apiVersion)))[obj.kind];
  } catch (e) {
    Model = undefined;
  }
  if (!Model) {
    problems.push(`${id}: ${obj.apiVersion} ${obj.kind} is not a Kubernetes API type`);
    continue;
  }
  const { proxy, seen } = tracked(obj);
  try {
    Model.prototype.validate.call(proxy);
  } catch (e) {
    for (const line of String(e.message).split("\n")) problems.push(`${id}: ${line}`);
  }
  const unknown = [];
  unknownFields(obj, seen, "", unknown);
  // apiVersion/kind are checked by the model, not read by the validator.
  for (const u of unknown) if (!/^\/(apiVersion|kind): /.test(u)) problems.push(`${id}: ${u}`);
}
for (const p of problems) console.log(p);
console.log(`validate_k8s: ${objects.length} objects, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
