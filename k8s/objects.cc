#include "k8s/objects.h"

#include <nlohmann/json.hpp>

namespace okna::k8s {

using nlohmann::json;

namespace {

// Field access that reports the JSON path of what is wrong.
class Reader {
 public:
  explicit Reader(std::string where) : where_(std::move(where)) {}
  const std::optional<core::Error>& error() const { return error_; }

  const json* object(const json& parent, const std::string& key, const std::string& path) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return nullptr;
    if (!it->is_object()) return fail(path, "expected an object");
    return &*it;
  }
  const json* array(const json& parent, const std::string& key, const std::string& path) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return nullptr;
    if (!it->is_array()) return fail(path, "expected an array");
    return &*it;
  }
  std::string string(const json& parent, const std::string& key, const std::string& path) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return {};
    if (!it->is_string()) {
      fail(path, "expected a string");
      return {};
    }
    return it->get<std::string>();
  }
  bool boolean(const json& parent, const std::string& key, const std::string& path) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return false;
    if (!it->is_boolean()) {
      fail(path, "expected true or false");
      return false;
    }
    return it->get<bool>();
  }
  // A map of strings; quantities may also come as JSON numbers from YAML dumps.
  StringMap stringMap(const json& parent, const std::string& key, const std::string& path,
                      bool allowNumbers) {
    StringMap out;
    const json* o = object(parent, key, path);
    if (o == nullptr) return out;
    for (auto it = o->begin(); it != o->end(); ++it) {
      if (it->is_string()) {
        out[it.key()] = it->get<std::string>();
      } else if (allowNumbers && it->is_number()) {
        out[it.key()] = it->dump();
      } else {
        fail(path + "." + it.key(), "expected a string");
      }
    }
    return out;
  }
  const json* fail(const std::string& path, const std::string& why) {
    if (!error_) error_ = core::makeError(where_ + ": " + path + ": " + why);
    return nullptr;
  }

 private:
  std::string where_;
  std::optional<core::Error> error_;
};

std::vector<ContainerInfo> containers(Reader& r, const json& spec, const std::string& key) {
  std::vector<ContainerInfo> out;
  const json* list = r.array(spec, key, "spec." + key);
  if (list == nullptr) return out;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string path = "spec." + key + "[" + std::to_string(i) + "]";
    const json& c = (*list)[i];
    if (!c.is_object()) {
      r.fail(path, "expected an object");
      break;
    }
    ContainerInfo info;
    info.name = r.string(c, "name", path + ".name");
    info.restartPolicy = r.string(c, "restartPolicy", path + ".restartPolicy");
    if (const json* res = r.object(c, "resources", path + ".resources"))
      info.requests = r.stringMap(*res, "requests", path + ".resources.requests", true);
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace

core::Result<NodeInfo> parseNode(const json& o, const std::string& where) {
  if (!o.is_object()) return core::makeError(where + ": expected a JSON object");
  Reader r(where);
  if (auto kind = o.find("kind"); kind != o.end() && kind->is_string() && *kind != "Node")
    return core::makeError(where + ": kind is " + kind->get<std::string>() + ", expected Node");
  NodeInfo n;
  const json empty = json::object();
  const json* meta = r.object(o, "metadata", "metadata");
  if (meta == nullptr) meta = &empty;
  n.name = r.string(*meta, "name", "metadata.name");
  n.uid = r.string(*meta, "uid", "metadata.uid");
  n.resourceVersion = r.string(*meta, "resourceVersion", "metadata.resourceVersion");
  n.labels = r.stringMap(*meta, "labels", "metadata.labels", false);
  n.annotations = r.stringMap(*meta, "annotations", "metadata.annotations", false);
  if (const json* spec = r.object(o, "spec", "spec")) {
    n.unschedulable = r.boolean(*spec, "unschedulable", "spec.unschedulable");
    if (const json* taints = r.array(*spec, "taints", "spec.taints")) {
      for (size_t i = 0; i < taints->size(); ++i) {
        const std::string path = "spec.taints[" + std::to_string(i) + "]";
        const json& t = (*taints)[i];
        if (!t.is_object()) {
          r.fail(path, "expected an object");
          break;
        }
        n.taints.push_back({r.string(t, "key", path + ".key"),
                            r.string(t, "value", path + ".value"),
                            r.string(t, "effect", path + ".effect")});
      }
    }
  }
  if (const json* status = r.object(o, "status", "status")) {
    n.capacity = r.stringMap(*status, "capacity", "status.capacity", true);
    n.allocatable = r.stringMap(*status, "allocatable", "status.allocatable", true);
    if (const json* addresses = r.array(*status, "addresses", "status.addresses")) {
      for (size_t i = 0; i < addresses->size(); ++i) {
        const std::string path = "status.addresses[" + std::to_string(i) + "]";
        const json& a = (*addresses)[i];
        if (!a.is_object()) {
          r.fail(path, "expected an object");
          break;
        }
        if (r.string(a, "type", path + ".type") == "InternalIP")
          n.internalIps.push_back(r.string(a, "address", path + ".address"));
      }
    }
  }
  if (r.error()) return *r.error();
  if (n.name.empty()) return core::makeError(where + ": metadata.name: missing");
  return n;
}

core::Result<PodInfo> parsePod(const json& o, const std::string& where) {
  if (!o.is_object()) return core::makeError(where + ": expected a JSON object");
  Reader r(where);
  PodInfo p;
  const json empty = json::object();
  const json* meta = r.object(o, "metadata", "metadata");
  if (meta == nullptr) meta = &empty;
  p.namespace_ = r.string(*meta, "namespace", "metadata.namespace");
  p.name = r.string(*meta, "name", "metadata.name");
  p.uid = r.string(*meta, "uid", "metadata.uid");
  p.resourceVersion = r.string(*meta, "resourceVersion", "metadata.resourceVersion");
  p.labels = r.stringMap(*meta, "labels", "metadata.labels", false);
  p.terminating = !r.string(*meta, "deletionTimestamp", "metadata.deletionTimestamp").empty();
  if (const json* spec = r.object(o, "spec", "spec")) {
    p.nodeName = r.string(*spec, "nodeName", "spec.nodeName");
    p.initContainers = containers(r, *spec, "initContainers");
    p.containers = containers(r, *spec, "containers");
    p.overhead = r.stringMap(*spec, "overhead", "spec.overhead", true);
  }
  if (const json* status = r.object(o, "status", "status"))
    p.phase = r.string(*status, "phase", "status.phase");
  if (r.error()) return *r.error();
  if (p.name.empty()) return core::makeError(where + ": metadata.name: missing");
  return p;
}

namespace {

// Copies from[key] when present, whatever its type: parsePod names a wrong one as before.
void copyField(const json& from, json& to, const char* key) {
  if (auto it = from.find(key); it != from.end()) to[key] = *it;
}

// The object at `key` with only `keep(object, into)`'s fields; another type is copied as is.
template <typename F>
void copyObject(const json& from, json& to, const char* key, F&& keep) {
  auto it = from.find(key);
  if (it == from.end()) return;
  if (!it->is_object()) {
    to[key] = *it;
    return;
  }
  json kept = json::object();
  keep(*it, kept);
  to[key] = std::move(kept);
}

void copyContainers(const json& spec, json& to, const char* key) {
  auto it = spec.find(key);
  if (it == spec.end()) return;
  if (!it->is_array()) {
    to[key] = *it;
    return;
  }
  json list = json::array();
  for (const json& c : *it) {
    if (!c.is_object()) {
      list.push_back(c);
      continue;
    }
    json kept = json::object();
    copyField(c, kept, "name");
    copyField(c, kept, "restartPolicy");
    copyObject(c, kept, "resources",
               [](const json& r, json& out) { copyField(r, out, "requests"); });
    list.push_back(std::move(kept));
  }
  to[key] = std::move(list);
}

}  // namespace

void trimPod(json& pod) {
  if (!pod.is_object()) return;
  json kept = json::object();
  copyObject(pod, kept, "metadata", [](const json& m, json& out) {
    for (const char* key : {"name", "namespace", "uid", "resourceVersion", "deletionTimestamp"})
      copyField(m, out, key);
    copyObject(m, out, "labels", [](const json& labels, json& l) {
      for (const char* key : kPodLabelsRead) copyField(labels, l, key);
    });
  });
  copyObject(pod, kept, "spec", [](const json& spec, json& out) {
    copyField(spec, out, "nodeName");
    copyField(spec, out, "overhead");
    copyContainers(spec, out, "initContainers");
    copyContainers(spec, out, "containers");
  });
  copyObject(pod, kept, "status",
             [](const json& status, json& out) { copyField(status, out, "phase"); });
  pod = std::move(kept);
}

std::string objectKey(const json& o) {
  const auto meta = o.find("metadata");
  if (meta == o.end() || !meta->is_object()) return {};
  // Server data of another type gives no key (the object is skipped), never an exception.
  const auto str = [&](const char* k) {
    auto it = meta->find(k);
    return it != meta->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::string name = str("name");
  std::string ns = str("namespace");
  return ns.empty() ? name : ns + "/" + name;
}

}  // namespace okna::k8s
