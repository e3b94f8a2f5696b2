#include "chassis/diff_json.h"

#include <nlohmann/json.hpp>

namespace okna::ovsdb {

nlohmann::json diffToJson(const ChassisOps& ops) {
  nlohmann::json out{{"ops", nlohmann::json::array()}, {"notes", ops.notes}};
  for (const auto& op : ops.ops) out["ops"].push_back(describe(op));
  return out;
}

}  // namespace okna::ovsdb
